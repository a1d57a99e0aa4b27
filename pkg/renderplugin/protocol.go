package renderplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/message"
)

// Paths of the protocol.
const (
	InfoPath   = "/v1/plugin"
	RenderPath = "/v1/render"
)

// Bounds of the protocol's small messages.
const (
	// MaxRequestBytes bounds a render's Request JSON (the spec's env and
	// parameters: the CRD allows far less).
	MaxRequestBytes = 1 << 20
	// MaxInfoBytes bounds a plugin's Info.
	MaxInfoBytes = 64 << 10
	// MaxFailureBytes bounds what is read of a failure answer.
	MaxFailureBytes = 64 << 10
	// MaxVersionBytes bounds Info.Version.
	MaxVersionBytes = 256
	// MaxPlugins bounds the sockets a discovery asks (Client.Discover).
	MaxPlugins = 64
	// maxStderrBytes is what a failure quotes of a command's stderr: its
	// end, where a program says why it stopped, within what
	// message.Excerpt keeps.
	maxStderrBytes = 200
)

// Info is what a plugin says of itself.
type Info struct {
	// Name is the plugin's name, the same as its socket's.
	Name string `json:"name"`
	// Version is the plugin's identity: a text that changes whenever the
	// plugin may answer the same request differently — its release, or
	// the digest of its program and configuration. render-controller
	// keeps a render while the source, the spec and this stay the same,
	// so a plugin upgraded in place renders every Kustomization again.
	// Serve sets it to ExecutableVersion() when the plugin leaves it
	// empty; at most MaxVersionBytes.
	Version string `json:"version,omitempty"`
	// Discover says which source folders the plugin recognises, as Argo
	// CD's discover.fileName: a glob matched in spec.path ("" is any).
	// render-controller refuses a Kustomization whose path has no match.
	Discover *Discover `json:"discover,omitempty"`
	// Parameters are the parameters the plugin takes; a Kustomization
	// passing another is refused.
	Parameters []ParameterSpec `json:"parameters,omitempty"`
}

// Discover is Argo CD's discover rule, its fileName form.
type Discover struct {
	FileName string `json:"fileName,omitempty"`
}

// ParameterSpec announces one parameter.
type ParameterSpec struct {
	Name string `json:"name"`
	// Type is "string" (the default), "array" or "map".
	Type string `json:"type,omitempty"`
	// Required parameters must be given.
	Required bool `json:"required,omitempty"`
}

// Request is one render's arguments.
type Request struct {
	// Path is spec.path, relative to the tree's root ("" or "." is the
	// root), with forward slashes.
	Path       string                        `json:"path"`
	Env        []kustomizev1.PluginEnv       `json:"env,omitempty"`
	Parameters []kustomizev1.PluginParameter `json:"parameters,omitempty"`
}

// Failure is a plugin's answer when it could not render: what went
// wrong, and the end of its command's stderr.
type Failure struct {
	Err    string `json:"error"`
	Stderr string `json:"stderr,omitempty"`
}

func (f *Failure) Error() string {
	if f.Stderr == "" {
		return f.Err
	}
	return f.Err + ": " + f.Stderr
}

// sanitised returns f with both texts made safe to quote in a status or
// an event: printable, one line, short (pkg/message.Excerpt).
func (f *Failure) sanitised() *Failure {
	return &Failure{Err: message.Excerpt([]byte(f.Err)), Stderr: message.Excerpt(tail([]byte(f.Stderr), maxStderrBytes))}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// ErrOutputTooLarge is an answer longer than the caller's bound.
var ErrOutputTooLarge = errors.New("the plugin's output passes its limit")

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidName reports whether name may name a plugin (and its socket): a
// DNS label, so it never names a path.
func ValidName(name string) bool { return len(name) <= 63 && namePattern.MatchString(name) }

// DecodeReply reads a render's answer: the manifests of a 200
// application/yaml answer, at most maxBytes of them (ErrOutputTooLarge
// past it), or the *Failure of any other, sanitised. Anything else is an
// error saying what was wrong with the answer, never quoting more than an
// excerpt of it.
func DecodeReply(status int, contentType string, body io.Reader, maxBytes int64) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if status == http.StatusOK {
		if mt != "application/yaml" {
			return nil, fmt.Errorf("the plugin answered %q, not application/yaml", message.Excerpt([]byte(contentType)))
		}
		b, err := io.ReadAll(io.LimitReader(body, maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading the plugin's answer: %w", err)
		}
		if int64(len(b)) > maxBytes {
			return nil, ErrOutputTooLarge
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxFailureBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the plugin's answer (status %d): %w", status, err)
	}
	var f Failure
	if mt != "application/json" || decodeStrict(b, &f) != nil || f.Err == "" {
		return nil, &Failure{Err: fmt.Sprintf("the plugin answered status %d", status), Stderr: message.Excerpt(b)}
	}
	return nil, f.sanitised()
}

// DecodeRequest reads a render request's first part, the Request, and
// returns it with the reader of the second, the source archive, which
// the caller bounds. Path must stay inside the tree.
func DecodeRequest(contentType string, body io.Reader) (*Request, io.Reader, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, errors.New("a render request is multipart/form-data")
	}
	mr := multipart.NewReader(body, params["boundary"])
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "request" {
		return nil, nil, errors.New(`a render request's first part is "request"`)
	}
	b, err := io.ReadAll(io.LimitReader(part, MaxRequestBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the request: %w", err)
	}
	if len(b) > MaxRequestBytes {
		return nil, nil, fmt.Errorf("the request passes %d bytes", MaxRequestBytes)
	}
	var req Request
	if err := decodeStrict(b, &req); err != nil {
		return nil, nil, fmt.Errorf("the request does not decode: %w", err)
	}
	if err := req.check(); err != nil {
		return nil, nil, err
	}
	part, err = mr.NextPart()
	if err != nil || part.FormName() != "source" {
		return nil, nil, errors.New(`a render request's second part is "source"`)
	}
	return &req, part, nil
}

// check refuses a path that leaves the tree.
func (r *Request) check() error {
	p := strings.TrimPrefix(r.Path, "./")
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q is not relative", r.Path)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("path %q leaves the source", r.Path)
		}
	}
	return nil
}

func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}
