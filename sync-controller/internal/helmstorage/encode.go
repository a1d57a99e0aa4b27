package helmstorage

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	rspb "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
)

// Records are written here, not by the SDK's Secret driver: the driver
// encodes each record with a new gzip compressor at its best compression,
// some 0.7 MB of state allocated for every record written (several per
// release: the record, then the previous one superseded) — measured, 35%
// of all the bytes sync-controller allocated in bench-helmrelease. That
// garbage did not set sync-controller's peak memory (59–61 MiB of
// proportional set size with either encoder: docs/bench/helm-release.md,
// "Memory, second pass"); it is collector work saved. The
// compressors here are pooled and reset, which gives the same bytes: the
// record is the SDK's encoding exactly (JSON of the release, gzip at
// gzip.BestCompression with an empty header, standard base64), as
// TestRecordsAreTheSDKsEncoding checks against the driver itself, and the
// helm CLI reads them (TestAReleaseOfTheHelmCLIIsAdoptedInPlace).
// Reading stays with the driver, which decodes what Helm, helm-controller
// or an older Helm wrote.

// recordType is the Secret type of Helm 3's and 4's release records.
const recordType corev1.SecretType = "helm.sh/release.v1"

var compressors = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestCompression) // a valid level: no error
	return w
}}

// encodeRecord is the SDK's driver.encodeRelease, with a pooled compressor.
func encodeRecord(rel *rspb.Release) ([]byte, error) {
	j, err := json.Marshal(rel)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := compressors.Get().(*gzip.Writer)
	w.Reset(&buf)
	_, err = w.Write(j)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	w.Reset(nil) // hold no reference to buf while pooled
	compressors.Put(w)
	if err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(out, buf.Bytes())
	return out, nil
}

// newRecordSecret is the Secret of rel's record named key, as the SDK's
// driver makes it: the release's own labels, then createdAt (a create)
// or modifiedAt (an update), name, owner, status and version.
func newRecordSecret(key string, rel *rspb.Release, create bool, now time.Time) (*corev1.Secret, error) {
	data, err := encodeRecord(rel)
	if err != nil {
		return nil, err
	}
	lbs := make(map[string]string, len(rel.Labels)+5)
	for k, v := range rel.Labels {
		lbs[k] = v
	}
	stamp := "modifiedAt"
	if create {
		stamp = "createdAt"
	}
	lbs[stamp] = strconv.FormatInt(now.Unix(), 10)
	lbs["name"] = rel.Name
	lbs["owner"] = "helm"
	lbs["status"] = rel.Info.Status.String()
	lbs["version"] = strconv.Itoa(rel.Version)
	sec := &corev1.Secret{Type: recordType, Data: map[string][]byte{"release": data}}
	sec.Name, sec.Labels = key, lbs
	return sec, nil
}
