package renderplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/capped"
)

// Plugin is a plugin's side of the protocol.
type Plugin struct {
	Info
	// Generate renders one request. r.Dir is the request's tree, read
	// only, removed after. A *Failure it returns is the answer as it is;
	// any other error becomes a Failure with its text.
	Generate func(ctx context.Context, r *Render) ([]byte, error)
	// Limits bound the tree a request may carry (pkg/artifact's
	// defaults when zero).
	Limits artifact.Limits
	// TempDir holds the requests' trees; "" is os.TempDir().
	TempDir string
}

// Render is one request as Generate sees it.
type Render struct {
	Request
	// Dir is the root of the source tree; AppDir is Path inside it.
	Dir, AppDir string
}

// Serve answers on a unix socket at socket (removed first if it is
// there, and when ctx ends) until ctx ends. The socket is bound under
// another name and renamed once it listens: bind makes the file before
// listen lets anyone connect, and a client that finds the file (a test,
// render-controller after a sidecar's restart) must not be refused.
func Serve(ctx context.Context, socket string, p *Plugin) error {
	if !ValidName(p.Name) {
		return fmt.Errorf("%q is not a plugin name", p.Name)
	}
	if p.Version == "" {
		v, err := ExecutableVersion()
		if err != nil {
			return err
		}
		p.Version = v
	}
	if len(p.Version) > MaxVersionBytes {
		return fmt.Errorf("the version passes %d bytes", MaxVersionBytes)
	}
	_ = os.Remove(socket)
	binding := socket + ".new"
	_ = os.Remove(binding)
	ln, err := net.Listen("unix", binding)
	if err != nil {
		return err
	}
	if err := os.Rename(binding, socket); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(socket)
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ExecutableVersion is the default Info.Version: "sha256:" and the
// digest of the running program, so that a plugin rebuilt or upgraded
// is a new identity without anyone choosing a version.
func ExecutableVersion() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the plugin's program for its version: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("reading the plugin's program for its version: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the plugin's program for its version: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Handler is the plugin's HTTP handler.
func (p *Plugin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+InfoPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Info)
	})
	mux.HandleFunc("POST "+RenderPath, p.serveRender)
	return mux
}

func (p *Plugin) serveRender(w http.ResponseWriter, hr *http.Request) {
	out, err := p.render(hr)
	if err != nil {
		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{Err: err.Error()}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(f)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(out)
}

func (p *Plugin) render(hr *http.Request) ([]byte, error) {
	limits := p.Limits
	if limits.MaxArchiveBytes <= 0 {
		limits.MaxArchiveBytes = artifact.DefaultMaxArchiveBytes
	}
	req, source, err := DecodeRequest(hr.Header.Get("Content-Type"), hr.Body)
	if err != nil {
		return nil, err
	}
	archive, err := io.ReadAll(io.LimitReader(source, limits.MaxArchiveBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the source: %w", err)
	}
	if int64(len(archive)) > limits.MaxArchiveBytes {
		return nil, fmt.Errorf("the source passes %d bytes", limits.MaxArchiveBytes)
	}
	dir, err := os.MkdirTemp(p.TempDir, "plumb-plugin-")
	if err != nil {
		return nil, err
	}
	defer removeAll(dir)
	sum := sha256.Sum256(archive)
	if _, err := artifact.ExtractBytes(archive, "sha256:"+hex.EncodeToString(sum[:]), dir, limits); err != nil {
		return nil, fmt.Errorf("extracting the source: %w", err)
	}
	readOnly(dir)
	r := &Render{Request: *req, Dir: dir, AppDir: filepath.Join(dir, filepath.FromSlash(path.Clean("/"+req.Path)))}
	return p.Generate(hr.Context(), r)
}

// readOnly takes the write bits off the tree, so a command cannot change
// what it was given by mistake.
func readOnly(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink == 0 {
			if info, err := d.Info(); err == nil {
				_ = os.Chmod(p, info.Mode().Perm()&^0o222)
			}
		}
		return nil
	})
}

// removeAll gives the write bits back to the folders first: a folder
// without them cannot be emptied.
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// Command runs argv in r.AppDir as Argo CD runs a plugin's generate
// command: each env entry as ARGOCD_ENV_<name>, each string parameter as
// PARAM_<NAME> (upper case, '-' and '.' as '_'), all of them as JSON in
// ARGOCD_APP_PARAMETERS, and the plugin's own environment besides. It
// returns stdout, at most maxOutput bytes (the command is killed past
// it); a command that fails is a *Failure with the end of its stderr.
func Command(ctx context.Context, r *Render, maxOutput int64, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.AppDir
	// The command's children go with it: a shell's sleep or pipeline
	// would otherwise outlive a cancelled render.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Env = os.Environ()
	for _, e := range r.Env {
		cmd.Env = append(cmd.Env, "ARGOCD_ENV_"+e.Name+"="+e.Value)
	}
	for _, p := range r.Parameters {
		if p.String != nil {
			cmd.Env = append(cmd.Env, "PARAM_"+strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(p.Name))+"="+*p.String)
		}
	}
	params, _ := json.Marshal(r.Parameters)
	cmd.Env = append(cmd.Env, "ARGOCD_APP_PARAMETERS="+string(params))
	// Past maxOutput the render has failed: stop the command there.
	stdout := &capped.Buffer{Max: int(maxOutput), Keep: capped.First, OnFull: cancel}
	stderr := capped.New(64<<10, capped.Last)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if stdout.Full() {
		return nil, &Failure{Err: fmt.Sprintf("%s wrote more than %d bytes", argv[0], maxOutput)}
	}
	if err != nil {
		return nil, &Failure{Err: fmt.Sprintf("%s: %v", argv[0], err), Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}
