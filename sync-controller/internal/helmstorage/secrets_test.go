package helmstorage

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func recordSecret(t *testing.T, decompressed int) *corev1.Secret {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(bytes.Repeat([]byte{' '}, decompressed)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))}}
}

func TestARecordThatDecompressesPastTheLimitIsRefusedBeforeTheDriverReadsIt(t *testing.T) {
	old := MaxDecodedBytes
	MaxDecodedBytes = 1 << 20
	t.Cleanup(func() { MaxDecodedBytes = old })
	if err := checkRecord(recordSecret(t, 1<<20)); err != nil {
		t.Errorf("a record of exactly the limit: %v", err)
	}
	// A few KiB of gzip that would fill 64 MiB.
	bomb := recordSecret(t, 64<<20)
	if n := len(bomb.Data["release"]); n > 200<<10 {
		t.Fatalf("the bomb is %d bytes", n)
	}
	if err := checkRecord(bomb); !errors.Is(err, errTooLarge) {
		t.Errorf("checkRecord of a gzip bomb: %v, want errTooLarge", err)
	}
	// What is not a gzipped record is the driver's to refuse.
	if err := checkRecord(&corev1.Secret{Data: map[string][]byte{"release": []byte("not base64!")}}); err != nil {
		t.Errorf("checkRecord of garbage: %v", err)
	}
}

func TestKeyIsHelmsSecretName(t *testing.T) {
	if got := Key("podinfo", 12); got != "sh.helm.release.v1.podinfo.v12" {
		t.Errorf("Key = %q", got)
	}
}
