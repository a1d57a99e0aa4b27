package renderworker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/render"
)

// A message between the parent and a worker is two frames: a JSON header
// and a blob of raw bytes (the chart archive of a request, the manifests
// of an answer; empty otherwise). A frame is its length as 4 bytes, big
// endian, then that many bytes. Keeping the large bytes out of the JSON
// spares their base64 and a copy on each side.
const frameHeaderBytes = 4

// Bounds on what one side reads from the other. A worker's answer is
// bounded by the render's own output limit (its manifests) plus
// maxHeaderBytes (the object ids and the error); a request by
// maxRequestBlob (a chart archive: --max-chart-size is at most the Helm
// SDK's 100 MiB) and maxHeaderBytes (the spec and the values,
// --max-values-size at most 16 MiB by default).
const (
	maxHeaderBytes = 64 << 20
	maxRequestBlob = 128 << 20
)

// errFrameTooLarge is a frame longer than its reader's bound.
var errFrameTooLarge = errors.New("frame longer than its bound")

// writeMessage writes header as JSON and the blob after it, given as
// the parts it is made of (a chart and its dependencies' archives), so
// that no side copies them into one slice first. A message whose blob is
// at most coalescedBlob goes in one write: each write to the pipe is a
// system call and may wake the other side, and a Kustomization's request
// and answer are small (docs/bench/fleet.md, "Fleet runs P1–P3").
func writeMessage(w io.Writer, header any, blob ...[]byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	var size uint64
	for _, p := range blob {
		size += uint64(len(p))
	}
	if uint64(len(h)) > uint64(^uint32(0)) || size > uint64(^uint32(0)) {
		return errFrameTooLarge
	}
	coalesce := size <= coalescedBlob
	n := 2*frameHeaderBytes + len(h)
	if coalesce {
		n += int(size)
	}
	msg := make([]byte, 0, n)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(h)))
	msg = append(msg, h...)
	msg = binary.BigEndian.AppendUint32(msg, uint32(size))
	if coalesce {
		for _, p := range blob {
			msg = append(msg, p...)
		}
		blob = nil
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	for _, p := range blob {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// coalescedBlob is the largest blob copied into its message's one write;
// a larger one (a chart archive, a large render) is written as it is.
const coalescedBlob = 64 << 10

// readMessage reads a header into header (unknown fields refused) and
// returns the blob after it. io.EOF means the other side closed before a
// message began; any other error, a broken or oversized message.
func readMessage(r io.Reader, header any, maxBlob int64) ([]byte, error) {
	h, err := readFrame(r, maxHeaderBytes)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(h, header); err != nil {
		return nil, fmt.Errorf("malformed header: %w", err)
	}
	blob, err := readFrame(r, maxBlob)
	if errors.Is(err, io.EOF) {
		return nil, io.ErrUnexpectedEOF
	}
	return blob, err
}

func readFrame(r io.Reader, max int64) ([]byte, error) {
	var n [frameHeaderBytes]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := int64(binary.BigEndian.Uint32(n[:]))
	if size > max {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", errFrameTooLarge, size, max)
	}
	// The buffer grows with what arrives, from at most frameChunk: a
	// length that promises more than the other side sends costs nothing.
	var buf bytes.Buffer
	buf.Grow(int(min(size, frameChunk)))
	if _, err := io.CopyN(&buf, r, size); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// frameChunk is the most a frame's buffer takes before its bytes arrive.
const frameChunk = 1 << 20

func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the header")
	}
	return nil
}

// request is one render. Exactly one of Kustomize, Helm, ChartPlan and
// ChartPackage is set; a Helm request's blob is the chart archive, a
// chart request's the archives its header lists, one after the other.
type request struct {
	Kustomize *kustomizeRequest `json:"kustomize,omitempty"`
	// Helm is helmrender.Render's options whole (the chart archive is
	// the blob), so a new option reaches the worker without a copy here.
	// Values travel as JSON: helmrender.Render itself takes them through
	// JSON before the engine sees them, so nothing is lost on the way.
	Helm         *helmrender.Options  `json:"helm,omitempty"`
	ChartPlan    *chartPlanRequest    `json:"chartPlan,omitempty"`
	ChartPackage *chartPackageRequest `json:"chartPackage,omitempty"`
	// Plugin is a render by a config-management plugin (plugin.go).
	Plugin *pluginRequest `json:"plugin,omitempty"`
	// Timeout is what is left of the caller's deadline: the worker's own
	// render stops there (the parent kills it there too), and its CPU
	// limit for this render is as many seconds, rounded up.
	Timeout time.Duration `json:"timeout"`

	// timeoutName names the time limit in the parent's messages, when
	// not the pool's Names.Timeout (a HelmChart's source's spec.timeout).
	timeoutName string
}

// kustomizeRequest is render.Build's arguments: the work folder is a path
// the worker reads (render-controller's shared source trees are on disk),
// the options are the caller's whole, their fields inline in the JSON.
type kustomizeRequest struct {
	WorkDir string                        `json:"workDir"`
	Spec    kustomizev1.KustomizationSpec `json:"spec"`
	KustomizeOptions
}

// Decryption is spec.decryption's keys as the Secret holds them: parsed
// by the worker with pkg/decrypt, so no parsed key leaves it.
type Decryption struct {
	// Secret names the Secret, for messages ("" with no secretRef: every
	// encrypted file then fails, saying so).
	Secret string `json:"secret"`
	// Data is the Secret's data.
	Data map[string][]byte `json:"data,omitempty"`
}

// chartSource is a helmpackage.Source across the process boundary: the
// source tree's folders, which the worker reads from disk as a kustomize
// build does, or the archive's length, its bytes first in the blob.
type chartSource struct {
	Root string `json:"root,omitempty"`
	Dir  string `json:"dir,omitempty"`
	// ArchiveBytes is the chart archive's length: the blob's first bytes.
	// Zero for a folder.
	ArchiveBytes int64  `json:"archiveBytes,omitempty"`
	Name         string `json:"name,omitempty"`
}

// chartPlanRequest is helmpackage.MakePlan's arguments.
type chartPlanRequest struct {
	Source chartSource        `json:"source"`
	Limits helmpackage.Limits `json:"limits"`
}

// chartPackageRequest is helmpackage.Build's arguments: the archives of
// the remote dependencies follow the chart's own in the blob, in Remote's
// order.
type chartPackageRequest struct {
	Source      chartSource        `json:"source"`
	Limits      helmpackage.Limits `json:"limits"`
	ValuesFiles []string           `json:"valuesFiles,omitempty"`
	// IgnoreMissing is helmpackage.Options.IgnoreMissingValuesFiles.
	IgnoreMissing bool   `json:"ignoreMissing,omitempty"`
	Version       string `json:"version,omitempty"`
	// OutDir is the folder the parent made for this request's package,
	// which it removes after the answer.
	OutDir string          `json:"outDir"`
	Remote []remoteArchive `json:"remote,omitempty"`
}

// remoteArchive is a pulled dependency and its archive's length in the
// blob.
type remoteArchive struct {
	Dependency helmpackage.Dependency `json:"dependency"`
	Bytes      int64                  `json:"bytes"`
}

// splitBlob cuts blob into parts of the lengths given, refusing lengths
// that do not add up to it.
func splitBlob(blob []byte, lengths ...int64) ([][]byte, error) {
	parts := make([][]byte, 0, len(lengths))
	for _, n := range lengths {
		if n < 0 || n > int64(len(blob)) {
			return nil, errors.New("the archives' lengths do not match the request's bytes")
		}
		parts = append(parts, blob[:n:n])
		blob = blob[n:]
	}
	if len(blob) != 0 {
		return nil, errors.New("the archives' lengths do not match the request's bytes")
	}
	return parts, nil
}

// response is a worker's answer; the blob is the manifests (the package,
// for a chart package request; nothing for a plan).
type response struct {
	// Error is the render's failure; nil on success.
	Error *responseError `json:"error,omitempty"`
	// IDs name the objects of the manifests in order.
	IDs    []object.ID `json:"ids,omitempty"`
	Digest string      `json:"digest,omitempty"`
	// Helm renders and chart requests only.
	ChartName    string `json:"chartName,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	ConfigDigest string `json:"configDigest,omitempty"`
	// Record and RecordOmitted are helmrender.Result's (a gzipped Helm
	// release record, at most helmrender.MaxRecordBytes).
	Record        []byte `json:"record,omitempty"`
	RecordOmitted string `json:"recordOmitted,omitempty"`
	// Remote is a chart plan's dependencies to pull.
	Remote []helmpackage.Dependency `json:"remote,omitempty"`
	// ValuesFiles are a chart package's merged values files.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// Exiting says the worker ends after this answer and takes no other
	// request.
	Exiting bool `json:"exiting,omitempty"`
}

// responseError is a *render.Error across the process boundary: its
// reason and message (already redacted by the render).
type responseError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// errorOf returns err as a responseError.
func errorOf(err error) *responseError {
	return &responseError{Reason: render.Reason(err), Message: err.Error()}
}

// err returns e as the *render.Error it was.
func (e *responseError) err() error {
	reason := e.Reason
	if !knownReason(reason) {
		// A worker only sends the reasons of pkg/render; anything else is
		// a broken answer, not a reason to show.
		reason = kustomizev1.BuildFailedReason
	}
	return &render.Error{Reason: reason, Err: errors.New(e.Message)}
}

// knownReason reports whether reason is one a render can fail with.
func knownReason(reason string) bool {
	switch reason {
	case kustomizev1.BuildFailedReason, kustomizev1.SubstituteFailedReason, kustomizev1.ValidationFailedReason,
		meta.LimitExceededReason, kustomizev1.RemoteResourceRefusedReason, kustomizev1.DecryptionFailedReason:
		return true
	}
	return false
}

// The reasons a worker and the pool fail a render with.
const (
	reasonLimit      = meta.LimitExceededReason
	reasonBuild      = kustomizev1.BuildFailedReason
	reasonDecryption = kustomizev1.DecryptionFailedReason
)
