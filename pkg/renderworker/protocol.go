package renderworker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
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

// writeMessage writes header as JSON and blob after it.
func writeMessage(w io.Writer, header any, blob []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	if err := writeFrame(w, h); err != nil {
		return err
	}
	return writeFrame(w, blob)
}

func writeFrame(w io.Writer, b []byte) error {
	if uint64(len(b)) > uint64(^uint32(0)) {
		return errFrameTooLarge
	}
	var n [frameHeaderBytes]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

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

// request is one render. Exactly one of Kustomize and Helm is set; a Helm
// request's blob is the chart archive.
type request struct {
	Kustomize *kustomizeRequest `json:"kustomize,omitempty"`
	Helm      *helmRequest      `json:"helm,omitempty"`
	// Timeout is what is left of the caller's deadline: the worker's own
	// render stops there (the parent kills it there too), and its CPU
	// limit for this render is as many seconds, rounded up.
	Timeout time.Duration `json:"timeout"`
}

// kustomizeRequest is render.Build's arguments: the work folder is a path
// the worker reads (render-controller's shared source trees are on disk),
// the decryption keys are the Secret's data, parsed by the worker.
type kustomizeRequest struct {
	WorkDir            string                        `json:"workDir"`
	Spec               kustomizev1.KustomizationSpec `json:"spec"`
	Vars               render.Variables              `json:"vars,omitempty"`
	StrictSubstitution bool                          `json:"strictSubstitution,omitempty"`
	Limits             render.Limits                 `json:"limits"`
	Decryption         *Decryption                   `json:"decryption,omitempty"`
	// Share lets the worker keep kustomize's output for builds of the same
	// tree, path and spec fields (render.SharedBuilds): the caller
	// promises WorkDir never changes.
	Share bool `json:"share,omitempty"`
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

// helmRequest is helmrender.Render's options but the archive (the blob).
// Values travel as JSON: helmrender.Render itself takes them through JSON
// before the engine sees them, so nothing is lost on the way.
type helmRequest struct {
	ReleaseName   string                  `json:"releaseName"`
	Namespace     string                  `json:"namespace"`
	Values        json.RawMessage         `json:"values,omitempty"`
	Capabilities  helmrender.Capabilities `json:"capabilities"`
	IsInstall     bool                    `json:"isInstall,omitempty"`
	CRDs          string                  `json:"crds,omitempty"`
	PostRenderers []helmv2.PostRenderer   `json:"postRenderers,omitempty"`
	Limits        helmrender.Limits       `json:"limits"`
}

// response is a worker's answer; the blob is the manifests.
type response struct {
	// Error is the render's failure; nil on success.
	Error *responseError `json:"error,omitempty"`
	// IDs name the objects of the manifests in order.
	IDs    []object.ID `json:"ids,omitempty"`
	Digest string      `json:"digest,omitempty"`
	// Helm renders only.
	ChartName    string `json:"chartName,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	ConfigDigest string `json:"configDigest,omitempty"`
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
		kustomizev1.LimitExceededReason, kustomizev1.RemoteResourceRefusedReason, kustomizev1.DecryptionFailedReason:
		return true
	}
	return false
}

// The reasons a worker and the pool fail a render with.
const (
	reasonLimit      = kustomizev1.LimitExceededReason
	reasonBuild      = kustomizev1.BuildFailedReason
	reasonDecryption = kustomizev1.DecryptionFailedReason
)
