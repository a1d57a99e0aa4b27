package renderplugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// serve starts p on a socket in a fresh folder and returns its client.
func serve(t *testing.T, p *Plugin) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "rp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		close(ready)
		done <- Serve(ctx, filepath.Join(dir, p.Name+".sock"), p)
	}()
	<-ready
	t.Cleanup(func() { cancel(); <-done })
	c := &Client{Dir: dir}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(c.Socket(p.Name)); err == nil {
			return c
		}
		<-time.After(10 * time.Millisecond)
	}
	t.Fatal("the plugin's socket did not appear")
	return nil
}

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAPluginSeesTheTreeTheRequestAndOnlyReadOnlyFiles(t *testing.T) {
	var seenDir string
	p := &Plugin{Info: Info{Name: "echo", Parameters: []ParameterSpec{{Name: "greeting"}}},
		Generate: func(ctx context.Context, r *Render) ([]byte, error) {
			seenDir = r.Dir
			b, err := os.ReadFile(filepath.Join(r.AppDir, "in.txt"))
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(r.AppDir, "in.txt"), nil, 0o644); err == nil && os.Geteuid() != 0 {
				return nil, errors.New("the tree is writable")
			}
			return []byte("kind: X\nin: " + strings.TrimSpace(string(b)) + "\ngreeting: " + *r.Parameters[0].String + "\nenv: " + r.Env[0].Value + "\n"), nil
		}}
	c := serve(t, p)
	info, err := c.Info(context.Background(), "echo")
	if err != nil || info.Name != "echo" {
		t.Fatalf("info: %v %v", info, err)
	}
	hello := "hello"
	req := &Request{Path: "app", Env: []kustomizev1.PluginEnv{{Name: "A", Value: "b"}},
		Parameters: []kustomizev1.PluginParameter{{Name: "greeting", String: &hello}}}
	out, err := c.Render(context.Background(), "echo", req, tree(t, map[string]string{"app/in.txt": "source"}), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := "kind: X\nin: source\ngreeting: hello\nenv: b\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	if _, err := os.Stat(seenDir); !os.IsNotExist(err) {
		t.Fatalf("the request's tree %s is still there: %v", seenDir, err)
	}
}

func TestCommandFailuresCarryTheEndOfStderrSanitised(t *testing.T) {
	p := &Plugin{Info: Info{Name: "sh"}, Generate: func(ctx context.Context, r *Render) ([]byte, error) {
		return Command(ctx, r, 1<<10, "sh", "-c", `head -c 5000 /dev/zero | tr '\0' x >&2; printf '\033[31mboom\033[0m\n' >&2; exit 3`)
	}}
	c := serve(t, p)
	_, err := c.Render(context.Background(), "sh", &Request{}, tree(t, nil), 1<<20)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("got %v, want a *Failure", err)
	}
	if !strings.Contains(f.Err, "exit status 3") || !strings.HasSuffix(f.Stderr, "boom") || strings.Contains(f.Stderr, "\033") {
		t.Fatalf("failure %q / %q", f.Err, f.Stderr)
	}
	if len(f.Stderr) > 300 {
		t.Fatalf("stderr not cut: %d bytes", len(f.Stderr))
	}
}

func TestOutputPastTheLimitIsRefused(t *testing.T) {
	p := &Plugin{Info: Info{Name: "flood"}, Generate: func(ctx context.Context, r *Render) ([]byte, error) {
		return bytes.Repeat([]byte("a"), 1<<20), nil
	}}
	c := serve(t, p)
	if _, err := c.Render(context.Background(), "flood", &Request{}, tree(t, nil), 1000); !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("got %v, want ErrOutputTooLarge", err)
	}
	// A command flooding its stdout is stopped at the plugin's own bound.
	p2 := &Plugin{Info: Info{Name: "yes"}, Generate: func(ctx context.Context, r *Render) ([]byte, error) {
		return Command(ctx, r, 1000, "yes")
	}}
	c2 := serve(t, p2)
	_, err := c2.Render(context.Background(), "yes", &Request{}, tree(t, nil), 1<<20)
	var f *Failure
	if !errors.As(err, &f) || !strings.Contains(f.Err, "more than 1000 bytes") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckRefusesWhatThePluginDoesNotTake(t *testing.T) {
	s := "x"
	info := &Info{Name: "p", Discover: &Discover{FileName: "*.tmpl"}, Parameters: []ParameterSpec{{Name: "a", Required: true}, {Name: "m", Type: "map"}}}
	dir := tree(t, map[string]string{"app/a.tmpl": ""})
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Path: "app", Parameters: []kustomizev1.PluginParameter{{Name: "a", String: &s}}}, ""},
		{Request{Path: "app"}, `needs the parameter "a"`},
		{Request{Path: "app", Parameters: []kustomizev1.PluginParameter{{Name: "a", String: &s}, {Name: "z", String: &s}}}, `takes no parameter "z"`},
		{Request{Path: "app", Parameters: []kustomizev1.PluginParameter{{Name: "a", String: &s}, {Name: "m", String: &s}}}, "is a map, not a string"},
		{Request{Path: ".", Parameters: []kustomizev1.PluginParameter{{Name: "a", String: &s}}}, "finds no *.tmpl"},
	} {
		err := info.Check(&c.req, dir)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: got %v, want %q", c.req, err, c.want)
		}
	}
}
