package renderworker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/capped"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testhelm"
)

// testMode makes the test binary a broken worker of some kind, for the
// tests of how the pool takes one.
const testMode = "PLUMB_RENDER_WORKER_TEST_MODE"

// gateFile names the file whose existence lets a "gate" worker answer.
const gateFile = "PLUMB_RENDER_WORKER_TEST_GATE"

func TestMain(m *testing.M) {
	switch os.Getenv(testMode) {
	case "":
	case "garbage":
		// Reads a request, answers with a header that is not JSON.
		in, out := os.NewFile(requestFD, "in"), os.NewFile(responseFD, "out")
		var req request
		if _, err := readMessage(in, &req, maxRequestBlob); err != nil {
			os.Exit(9)
		}
		_ = writeFrame(out, []byte("{not json"))
		_ = writeFrame(out, nil)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "die":
		// Reads a request and exits without an answer.
		var req request
		if _, err := readMessage(os.NewFile(requestFD, "in"), &req, maxRequestBlob); err != nil {
			os.Exit(9)
		}
		os.Exit(7)
	case "cpu":
		// Spins past a CPU limit of half a second.
		if err := limitCPU(500 * time.Millisecond); err != nil {
			os.Exit(9)
		}
		go exitOnCPULimit()
		//lint:ignore SA5002 spinning is the point: it passes the CPU limit
		for {
		}
	case "gate":
		// Answers every request with no manifests, once the file named
		// by gateFile exists; exits when the pool closes its requests.
		in, out := bufio.NewReader(os.NewFile(requestFD, "in")), os.NewFile(responseFD, "out")
		for {
			var req request
			if _, err := readMessage(in, &req, maxRequestBlob); err != nil {
				os.Exit(0)
			}
			for {
				if _, err := os.Stat(os.Getenv(gateFile)); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := writeMessage(out, &response{Digest: digestOf(nil)}); err != nil {
				os.Exit(9)
			}
		}
	default:
		os.Exit(9)
	}
	ServeIfWorker()
	os.Exit(m.Run())
}

// helperCommand runs the test binary in a test mode.
func helperCommand(mode string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{testMode + "=" + mode}
		return cmd
	}
}

// tree writes a work folder with files under source/.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(render.SourceDir(dir), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chartWith packages a chart whose one template is tmpl.
func chartWith(t *testing.T, tmpl string) []byte {
	t.Helper()
	tgz, err := chartArchive(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

func chartArchive(tmpl string) ([]byte, error) {
	return testhelm.Package(testhelm.Chart{Name: "c", Version: "1.0.0", Files: testhelm.Files{
		"values.yaml":         "greeting: hello\n",
		"templates/demo.yaml": tmpl,
	}})
}

const configMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
`

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newPool(t *testing.T, opts Options) *Pool {
	p := NewPool(opts)
	t.Cleanup(p.Close)
	return p
}

func limitReason(err error) string {
	var e *render.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return fmt.Sprintf("not a *render.Error: %T", err)
}

func TestAKustomizationRendersInAWorkerAsInProcess(t *testing.T) {
	g := NewWithT(t)
	dir := tree(t, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  color: ${color}\n",
	})
	spec := &kustomizev1.KustomizationSpec{Path: "app", TargetNamespace: "team-a",
		PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"color": "blue"}}}
	vars := render.Variables{"color": {Value: "blue"}}

	want, err := render.Build(withTimeout(t, time.Minute), dir, spec, render.Options{Vars: vars})
	g.Expect(err).NotTo(HaveOccurred())
	p := newPool(t, Options{Workers: 1})
	got, err := p.Kustomize(withTimeout(t, time.Minute), dir, spec, KustomizeOptions{Vars: vars})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got.Manifests)).To(Equal(string(want.Manifests)))
	g.Expect(got.Digest).To(Equal(want.Digest))
	g.Expect(got.Objects).To(Equal(want.Objects))
	g.Expect(string(got.Manifests)).To(ContainSubstring("namespace: team-a"))
}

func TestAChartRendersInAWorkerAsInProcess(t *testing.T) {
	g := NewWithT(t)
	archive := chartWith(t, configMapTemplate+"  revision: {{ .Release.Revision | quote }}\n")
	opts := helmrender.Options{ReleaseName: "demo", Namespace: "team-a", IsInstall: true, Revision: 5,
		Values: map[string]any{"greeting": "hi", "n": 3.0, "list": []any{"a", 1.5, true, nil}}}
	want, err := helmrender.Render(withTimeout(t, time.Minute), archive, opts)
	g.Expect(err).NotTo(HaveOccurred())
	p := newPool(t, Options{Workers: 1})
	got, err := p.Helm(withTimeout(t, time.Minute), archive, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*got).To(Equal(*want))
	g.Expect(string(got.Manifests)).To(ContainSubstring(`greeting: hi`))
	g.Expect(string(got.Manifests)).To(ContainSubstring(`revision: "5"`))
}

func TestARenderErrorCrossesAsTheSameReasonAndMessage(t *testing.T) {
	g := NewWithT(t)
	dir := tree(t, map[string]string{
		"app/kustomization.yaml": "resources:\n- https://example.com/evil.yaml\n",
	})
	spec := &kustomizev1.KustomizationSpec{Path: "app"}
	_, want := render.Build(withTimeout(t, time.Minute), dir, spec, render.Options{})
	g.Expect(want).To(HaveOccurred())
	p := newPool(t, Options{Workers: 1})
	_, err := p.Kustomize(withTimeout(t, time.Minute), dir, spec, KustomizeOptions{})
	g.Expect(limitReason(err)).To(Equal(kustomizev1.RemoteResourceRefusedReason))
	g.Expect(err.Error()).To(Equal(want.Error()))
	// A failed render is the render's, not the worker's: it is reused.
	g.Expect(p.Started()).To(Equal(int64(1)))
}

// A string doubled in a loop: 2^40 bytes if nothing stops it.
const doublingTemplate = `{{- $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: big
data:
  size: "{{ len $s }}"
`

func TestATemplateThatDoublesAStringPassesTheMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1, Memory: 256 << 20})
	_, err := p.Helm(withTimeout(t, 2*time.Minute), chartWith(t, doublingTemplate), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(ContainSubstring("memory limit of 256 MiB (--render-worker-memory)"))

	// The next render gets a new worker and succeeds.
	res, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, configMapTemplate), helmrender.Options{ReleaseName: "y", Namespace: "a"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(Equal(1))
}

func TestALoopingTemplateIsKilledAtItsDeadline(t *testing.T) {
	for name, tmpl := range map[string]string{
		"range over an integer": `{{ range 2000000000 }}{{ end }}`,
		"nested ranges":         `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := newPool(t, Options{Workers: 1})
			// The worker must be running before the deadline starts.
			w, err := p.take(context.Background(), &request{})
			g.Expect(err).NotTo(HaveOccurred())
			p.give(w, false)
			pid := w.cmd.Process.Pid

			_, err = p.Helm(withTimeout(t, 2*time.Second), chartWith(t, tmpl), helmrender.Options{ReleaseName: "x", Namespace: "a"})
			g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
			g.Expect(err.Error()).To(ContainSubstring("did not finish within its time limit"))
			g.Expect(err.Error()).To(ContainSubstring("its render worker was stopped"))
			// Nothing runs on: the process is gone when Helm returns.
			g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH))
		})
	}
}

func TestAValueThatHoldsItselfPassesTheStackLimit(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1})
	tmpl := `{{ $m := dict }}{{ $_ := set $m "self" $m }}{{ printf "%v" $m }}`
	_, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, tmpl), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(ContainSubstring("stack limit of 64 MiB"))
}

// A Jsonnet recursion in tail position with tailstrict keeps one
// go-jsonnet frame (its max stack never trips) and grows the Go stack
// without end, a fatal error in any process: the worker dies at its stack
// limit, the render is LimitExceeded naming it, and the pool renders on.
func TestATailstrictJsonnetRecursionPassesTheStackLimit(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1})
	spec := &kustomizev1.KustomizationSpec{Path: "app"}
	dir := tree(t, map[string]string{"app/main.jsonnet": "local f(n) = f(n + 1) tailstrict;\nf(0)\n"})
	_, err := p.Kustomize(withTimeout(t, 2*time.Minute), dir, spec, KustomizeOptions{})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(Equal("rendering passed its stack limit of 64 MiB: a template, value or Jsonnet function that recurses without end (a value holding itself, a tailstrict call); its render worker was stopped"))

	dir = tree(t, map[string]string{"app/main.jsonnet": "local f(n) = if n == 100 then n else f(n + 1) tailstrict;\n{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'deep'}, data: {n: std.toString(f(0))}}\n"})
	res, err := p.Kustomize(withTimeout(t, 2*time.Minute), dir, spec, KustomizeOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(res.Manifests)).To(ContainSubstring(`"n": "100"`))
}

func TestAWorkerThatAnswersGarbageFailsTheRender(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1, Command: helperCommand("garbage")})
	_, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, configMapTemplate), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(ContainSubstring("answered with a broken message"))
}

func TestAWorkerThatDiesFailsTheRender(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1, Command: helperCommand("die")})
	_, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, configMapTemplate), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(limitReason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(ContainSubstring("the render worker exited (exit status 7) before it answered"))
}

func TestAWorkerPastItsCPULimitExitsAndIsNamed(t *testing.T) {
	g := NewWithT(t)
	cmd := helperCommand("cpu")()
	var out bytes.Buffer
	cmd.Stderr = &out
	err := cmd.Run()
	g.Expect(cmd.ProcessState).NotTo(BeNil(), "%v", err)
	g.Expect(cmd.ProcessState.ExitCode()).To(Equal(workerExitCPU), out.String())

	w := &process{pool: &Pool{opts: Options{Names: renderNames}}, cmd: cmd, stderr: capped.New(10, capped.FirstAndLast), exited: make(chan struct{})}
	close(w.exited)
	msg := w.why(context.Background(), &request{Timeout: 3 * time.Second}, nil, 1)
	g.Expect(msg).To(HavePrefix("rendering used more CPU time than its limit of 3s (--render-timeout)"))
}

func TestRendersOnOneWorkerShareNothing(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1})
	archive := chartWith(t, configMapTemplate)
	first, err := p.Helm(withTimeout(t, time.Minute), archive, helmrender.Options{ReleaseName: "a", Namespace: "n",
		Values: map[string]any{"greeting": "first-secret"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(first.Manifests)).To(ContainSubstring("first-secret"))
	second, err := p.Helm(withTimeout(t, time.Minute), archive, helmrender.Options{ReleaseName: "a", Namespace: "n"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(second.Manifests)).NotTo(ContainSubstring("first-secret"))
	g.Expect(string(second.Manifests)).To(ContainSubstring("greeting: hello"))
	// The same worker served both.
	g.Expect(p.Started()).To(Equal(int64(1)))
}

func TestAHostileRenderDoesNotHoldUpAnother(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 2})
	hostile := make(chan error, 1)
	go func() {
		_, err := p.Helm(withTimeout(t, 20*time.Second), chartWith(t, `{{ range 2000000000 }}{{ end }}`), helmrender.Options{ReleaseName: "x", Namespace: "a"})
		hostile <- err
	}()
	res, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, configMapTemplate), helmrender.Options{ReleaseName: "y", Namespace: "b"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(Equal(1))
	// The fine render finished while the hostile one still ran.
	g.Expect(hostile).NotTo(Receive())
	g.Expect(limitReason(<-hostile)).To(Equal(meta.LimitExceededReason))
}

func TestAWorkerHasItsLimits(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1, Memory: 300 << 20})
	// A worker that has answered has set its limits.
	_, err := p.Helm(withTimeout(t, time.Minute), chartWith(t, configMapTemplate), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := p.take(context.Background(), &request{})
	g.Expect(err).NotTo(HaveOccurred())
	defer p.give(w, false)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", w.cmd.Process.Pid))
	g.Expect(err).NotTo(HaveOccurred())
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	g.Expect(err).NotTo(HaveOccurred())
	field := func(text, prefix string) []string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(strings.TrimPrefix(l, prefix))
			}
		}
		return nil
	}
	g.Expect(field(string(limits), "Max open files")).To(HaveExactElements("64", "64", "files"))
	g.Expect(field(string(limits), "Max file size")).To(HaveExactElements("0", "0", "bytes"))
	g.Expect(field(string(limits), "Max core file size")).To(HaveExactElements("0", "0", "bytes"))
	as := field(string(limits), "Max address space")
	g.Expect(as).To(HaveLen(3))
	g.Expect(field(string(status), "NoNewPrivs:")).To(HaveExactElements("1"))
	// Nothing of the parent's environment reaches a worker; a cgo build's
	// worker started itself again with threads that cost little of its
	// address space.
	want := []string{envWorker + "=" + protocolVersion, envMemory + "=314572800", envFileSize + "=0"}
	if withCgo {
		want = append(want, envMallocArenas+"=1")
		stack := field(string(limits), "Max stack size")
		g.Expect(stack).To(HaveLen(3))
		g.Expect(stack[0]).To(Equal(strconv.Itoa(threadStackBytes)))
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", w.cmd.Process.Pid))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")).To(ConsistOf(want))
}

// gatedCommand runs the test binary as a worker that answers only while
// the file gate exists.
func gatedCommand(gate string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{testMode + "=gate", gateFile + "=" + gate}
		return cmd
	}
}

func TestThePoolGrowsWithItsQueueAndShrinksWhenIdle(t *testing.T) {
	g := NewWithT(t)
	gate := filepath.Join(t.TempDir(), "open")
	openGate := func() { g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed()) }
	p := newPool(t, Options{Workers: 3, Command: gatedCommand(gate), scaleAfter: 20 * time.Millisecond, idleStop: 300 * time.Millisecond})
	render := func() error {
		_, err := p.Helm(withTimeout(t, time.Minute), []byte("a chart"), helmrender.Options{ReleaseName: "x", Namespace: "a"})
		return err
	}
	// The pool starts one worker, and renders one after another all go
	// to it.
	g.Eventually(p.Idle).Should(Equal(1))
	openGate()
	for range 3 {
		g.Expect(render()).To(Succeed())
	}
	g.Expect(p.Started()).To(Equal(int64(1)))
	g.Expect(p.Running()).To(Equal(1))

	// Renders that queue while the worker is busy get workers of their
	// own, up to Workers, before any render has answered: they do not
	// wait on one worker.
	g.Expect(os.Remove(gate)).To(Succeed())
	results := make(chan error, 5)
	for range 5 {
		go func() { results <- render() }()
	}
	g.Eventually(p.Started).Should(Equal(int64(3)))
	g.Expect(p.Running()).To(Equal(3))
	g.Expect(results).NotTo(Receive())
	openGate()
	for range 5 {
		g.Expect(<-results).To(Succeed())
	}
	g.Expect(p.Started()).To(Equal(int64(3)), "never more workers than Workers")

	// Idle, the workers beyond the first stop; the first stays and serves
	// the next render.
	g.Eventually(p.Running).Should(Equal(1))
	g.Consistently(p.Running, time.Second).Should(Equal(1))
	g.Expect(p.Idle()).To(Equal(1))
	g.Expect(render()).To(Succeed())
	g.Expect(p.Started()).To(Equal(int64(3)))
}

func TestAPoolOfOneWorkerQueuesRenders(t *testing.T) {
	g := NewWithT(t)
	gate := filepath.Join(t.TempDir(), "open")
	p := newPool(t, Options{Workers: 1, Command: gatedCommand(gate), scaleAfter: 10 * time.Millisecond})
	results := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := p.Helm(withTimeout(t, time.Minute), []byte("a chart"), helmrender.Options{ReleaseName: "x", Namespace: "a"})
			results <- err
		}()
	}
	// However long they wait, one worker is all the pool may have.
	g.Consistently(p.Running, 500*time.Millisecond).Should(Equal(1))
	g.Expect(os.WriteFile(gate, nil, 0o600)).To(Succeed())
	for range 3 {
		g.Expect(<-results).To(Succeed())
	}
	g.Expect(p.Started()).To(Equal(int64(1)))
}

func TestAWorkerThatCannotStartFailsTheRenderWithWhy(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 2, Command: func() *exec.Cmd { return exec.Command(filepath.Join(t.TempDir(), "no-such-program")) }})
	ctx := withTimeout(t, time.Minute)
	_, err := p.Helm(ctx, []byte("a chart"), helmrender.Options{ReleaseName: "x", Namespace: "a"})
	g.Expect(err).To(MatchError(ContainSubstring("starting a render worker")))
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the render failed with the start's error, not at its deadline")
	g.Expect(p.Running()).To(BeZero())
}
