package renderplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"path"
	"path/filepath"

	"plumb.dev/pkg/artifact"
)

// Client talks to the plugins whose sockets are in Dir.
type Client struct {
	// Dir holds the sockets, <name>.sock.
	Dir string
}

// Socket is the path of the socket of the plugin name.
func (c *Client) Socket(name string) string { return filepath.Join(c.Dir, name+".sock") }

// httpClient dials the plugin's socket whatever the URL says: its
// transport reaches nothing else (a render worker's default transport
// refuses everything).
func (c *Client) httpClient(name string) *http.Client {
	sock := c.Socket(name)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}}
}

// Info asks the plugin name what it takes.
func (c *Client) Info(ctx context.Context, name string) (*Info, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%q is not a plugin name", name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://plugin"+InfoPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.httpClient(name).Do(req)
	if err != nil {
		return nil, fmt.Errorf("plugin %q does not answer on %s: %w", name, c.Socket(name), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxInfoBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading plugin %q's description: %w", name, err)
	}
	var info Info
	if resp.StatusCode != http.StatusOK || len(b) > MaxInfoBytes || decodeStrict(b, &info) != nil {
		return nil, fmt.Errorf("plugin %q did not describe itself (status %d)", name, resp.StatusCode)
	}
	if info.Name != name {
		return nil, fmt.Errorf("the socket of plugin %q answers as %q", name, info.Name)
	}
	if len(info.Version) > MaxVersionBytes {
		return nil, fmt.Errorf("plugin %q announces a version longer than %d bytes", name, MaxVersionBytes)
	}
	return &info, nil
}

// Check refuses a request the plugin does not take: a parameter it does
// not announce, one of another type, a required one missing; and a path
// without a file its discover rule names.
func (info *Info) Check(req *Request, sourceDir string) error {
	specs := map[string]ParameterSpec{}
	for _, s := range info.Parameters {
		specs[s.Name] = s
	}
	given := map[string]bool{}
	for _, p := range req.Parameters {
		s, ok := specs[p.Name]
		if !ok {
			return fmt.Errorf("plugin %q takes no parameter %q", info.Name, p.Name)
		}
		typ := "string"
		switch {
		case p.Array != nil:
			typ = "array"
		case p.Map != nil:
			typ = "map"
		}
		if want := cmpOr(s.Type, "string"); want != typ {
			return fmt.Errorf("parameter %q of plugin %q is a %s, not a %s", p.Name, info.Name, want, typ)
		}
		given[p.Name] = true
	}
	for _, s := range info.Parameters {
		if s.Required && !given[s.Name] {
			return fmt.Errorf("plugin %q needs the parameter %q", info.Name, s.Name)
		}
	}
	if info.Discover != nil && info.Discover.FileName != "" && !info.discovers(req.Path, sourceDir) {
		return fmt.Errorf("plugin %q finds no %s in path %q", info.Name, info.Discover.FileName, req.Path)
	}
	return nil
}

// discovers reports whether the plugin's discover rule matches a file in
// the folder p of the tree in sourceDir; a plugin without a rule
// discovers nothing (it must be named).
func (info *Info) discovers(p, sourceDir string) bool {
	if info.Discover == nil || info.Discover.FileName == "" {
		return false
	}
	matches, err := filepath.Glob(filepath.Join(sourceDir, filepath.FromSlash(path.Clean("/"+p)), info.Discover.FileName))
	return err == nil && len(matches) > 0
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Render sends the tree in sourceDir and req to the plugin name and
// returns its manifests, at most maxBytes (ErrOutputTooLarge). A plugin's
// own failure is a *Failure, sanitised. ctx bounds the whole exchange.
func (c *Client) Render(ctx context.Context, name string, req *Request, sourceDir string, maxBytes int64) ([]byte, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%q is not a plugin name", name)
	}
	body, contentType, err := EncodeRequest(ctx, req, sourceDir)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://plugin"+RenderPath, body)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", contentType)
	resp, err := c.httpClient(name).Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("plugin %q does not answer on %s: %w", name, c.Socket(name), err)
	}
	defer resp.Body.Close()
	return DecodeReply(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body, maxBytes)
}

// EncodeRequest makes a render request's body: the Request, then the
// tree in sourceDir as a tar.gz.
func EncodeRequest(ctx context.Context, req *Request, sourceDir string) (*bytes.Buffer, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="request"`)
	h.Set("Content-Type", "application/json")
	w, err := mw.CreatePart(h)
	if err != nil {
		return nil, "", err
	}
	if err := jsonEncode(w, req); err != nil {
		return nil, "", err
	}
	h = textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="source"; filename="source.tar.gz"`)
	h.Set("Content-Type", "application/gzip")
	if w, err = mw.CreatePart(h); err != nil {
		return nil, "", err
	}
	if err := artifact.Pack(ctx, w, sourceDir, artifact.PackOptions{Level: 1}); err != nil {
		return nil, "", fmt.Errorf("packing the source for the plugin: %w", err)
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return &body, mw.FormDataContentType(), nil
}

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
