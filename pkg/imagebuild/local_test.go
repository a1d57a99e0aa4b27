package imagebuild

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// root is the repository's top, from this package's folder.
const root = "../.."

// The example images, pushed to an in-process registry on 127.0.0.1, are
// what the sample needs: non-root, no shell, the entrypoint their binary,
// tagged and labelled with the sample's version; the binaries taken out of
// the layers serve the page and the probes and run the hook's steps. A
// second push of the same sources, to a new registry as a new start of the
// launcher has, comes from the cache with the same digests.
func TestExampleImagesArePushedCachedAndRun(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(quietRegistry())
	t.Cleanup(srv.Close)
	o := LocalOptions{
		Root:     root,
		Registry: strings.TrimPrefix(srv.URL, "http://") + "/plumb",
		Programs: ExamplePrograms,
		CacheDir: t.TempDir(),
		Logf:     t.Logf,
	}
	first, err := PushLocal(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].Cached || first[1].Cached {
		t.Fatalf("first push: %+v, want web and hook built", first)
	}

	work := t.TempDir()
	for _, p := range first {
		if want := o.Registry + "/" + p.Program.Name + ":" + ExampleVersion; p.Ref.String() != want {
			t.Errorf("pushed as %s, want %s", p.Ref, want)
		}
		idx, err := Pull(ctx, p.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if d := digest(t, idx); d != p.Digest {
			t.Fatalf("%s: the registry holds %s, pushed %s", p.Ref, d, p.Digest)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 || m.Manifests[0].Platform.Architecture != runtime.GOARCH {
			t.Fatalf("%s: %d images, want the host's platform only", p.Ref, len(m.Manifests))
		}
		img, err := idx.Image(m.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		bin := p.Program.Binary()
		if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/" + bin}) || cf.Config.Labels[LabelVersion] != ExampleVersion {
			t.Fatalf("%s: user %q, entrypoint %q, version %q", p.Ref, cf.Config.User, cf.Config.Entrypoint, cf.Config.Labels[LabelVersion])
		}
		// No shell, passwd, the CA bundle, and the binary taken out of the
		// layer answers --help.
		if err := Check(ctx, idx, bin, work); err != nil {
			t.Fatal(err)
		}
	}
	bins := filepath.Join(work, "check-linux-"+runtime.GOARCH)
	t.Run("web", func(t *testing.T) { runWeb(t, filepath.Join(bins, "web")) })
	t.Run("hook", func(t *testing.T) { runHook(t, filepath.Join(bins, "hook")) })

	srv2 := httptest.NewServer(quietRegistry())
	t.Cleanup(srv2.Close)
	o.Registry = strings.TrimPrefix(srv2.URL, "http://") + "/plumb"
	second, err := PushLocal(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range second {
		if !p.Cached || p.Digest != first[i].Digest {
			t.Errorf("second push of %s: cached %v, digest %s; want the cached %s", p.Program.Name, p.Cached, p.Digest, first[i].Digest)
		}
		if _, err := Pull(ctx, p.Ref); err != nil {
			t.Errorf("the new registry does not hold %s: %v", p.Ref, err)
		}
	}
}

// runWeb starts the web server as its Pod would, on a free port of
// 127.0.0.1, with the environment of each story.
func runWeb(t *testing.T, bin string) {
	start := func(env ...string) (string, *exec.Cmd, *strings.Builder) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin)
		cmd.Env = append([]string{"LISTEN=" + addr}, env...)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return "http://" + addr, cmd, out
	}
	get := func(url string) (int, string) {
		t.Helper()
		var last error
		for range 100 {
			resp, err := http.Get(url)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode, string(b)
			}
			last = err
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("GET %s: %v", url, last)
		return 0, ""
	}

	url, _, _ := start("GREETING=Hello from a test")
	if code, body := get(url + "/"); code != http.StatusOK || !strings.Contains(body, "Hello from a test") || !strings.Contains(body, "web "+ExampleVersion) {
		t.Fatalf("GET / = %d %q, want the greeting and version %s", code, body, ExampleVersion)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(url + path); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, code)
		}
	}

	url, _, _ = start("READY_AFTER=never")
	if code, _ := get(url + "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("READY_AFTER=never: /readyz = %d, want 503", code)
	}
	if code, _ := get(url + "/healthz"); code != http.StatusOK {
		t.Errorf("READY_AFTER=never: /healthz = %d, want 200", code)
	}

	_, cmd, out := start("EXIT_AT_START=3")
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(out.String(), "EXIT_AT_START") {
		t.Errorf("EXIT_AT_START=3: %v, %q; want exit code 3 and a word why", err, out)
	}
}

func runHook(t *testing.T, bin string) {
	cmd := exec.Command(bin, "-steps=2", "-step-duration=0s", "-exit-code=5")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Fatalf("hook: %v, want exit code 5: %s", err, out)
	}
	for _, want := range []string{"hook " + ExampleVersion, "step 1/2", "step 2/2", "exit code 5"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("hook printed %q, want %q in it", out, want)
		}
	}
}

// The cache key follows the working tree: a change, an untracked file and
// a deletion change it, going back restores it, an ignored file does not
// count, and neither do paths outside the sources.
func TestTheSourcesDigestFollowsTheWorkingTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) {
		t.Helper()
		if _, err := git(ctx, dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	write("app/main.go", "package main\n")
	write("other/x.go", "package x\n")
	write(".gitignore", "app/ignored\n")
	run("init", "-q")
	run("add", ".")
	run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")

	sources := []string{"app", "go.work"}
	digestOf := func() string {
		t.Helper()
		d, err := sourcesDigest(ctx, dir, sources)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clean := digestOf()
	steps := []struct {
		what    string
		do      func()
		changes bool
	}{
		{"an edit", func() { write("app/main.go", "package main // edited\n") }, true},
		{"the edit undone", func() { write("app/main.go", "package main\n") }, false},
		{"an untracked file", func() { write("app/new.go", "package main\n") }, true},
		{"the untracked file removed", func() { os.Remove(filepath.Join(dir, "app/new.go")) }, false},
		{"an ignored file", func() { write("app/ignored", "x") }, false},
		{"a file outside the sources", func() { write("other/x.go", "package y\n") }, false},
		{"a deletion", func() { os.Remove(filepath.Join(dir, "app/main.go")) }, true},
	}
	for _, s := range steps {
		s.do()
		if got := digestOf(); (got != clean) != s.changes {
			t.Errorf("after %s: the digest changed = %v, want %v", s.what, got != clean, s.changes)
		}
	}
}

// Each program's Sources hold every folder of the workspace its package
// imports, so no change to what an image is made of leaves its cache key
// unchanged; the examples import only the standard library. The
// workspace's modules are plumb.dev/<folder>, so an import path says its
// folder.
func TestProgramSourcesCoverWhatTheyImport(t *testing.T) {
	programs := slices.Concat(PlumbPrograms, ExamplePrograms, PluginPrograms)
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}
	for _, p := range programs {
		args = append(args, p.Package)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(programs) {
		t.Fatalf("go list printed %d lines for %d programs", len(lines), len(programs))
	}
	for i, p := range programs {
		for _, imp := range strings.Fields(lines[i]) {
			rel, ok := strings.CutPrefix(imp, "plumb.dev/")
			if !ok {
				if p.VersionPackage == "main" && strings.Contains(strings.Split(imp, "/")[0], ".") {
					t.Errorf("%s imports %s: the examples use the standard library only", p.Name, imp)
				}
				continue // the module cache: pinned by the go.sum files in every key
			}
			if !slices.ContainsFunc(p.Sources, func(s string) bool { return rel == s || strings.HasPrefix(rel, s+"/") }) {
				t.Errorf("%s imports %s, outside its Sources %v", p.Name, imp, p.Sources)
			}
		}
	}
}
