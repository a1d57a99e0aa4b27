package renderworker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/capped"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
)

// Defaults of Options.
const (
	// DefaultWorkers is --render-workers: as many renders at once as
	// render-controller's default --concurrent in deploy/. The pool runs
	// that many workers only while renders queue (Pool).
	DefaultWorkers = 2
	// DefaultMemory is --render-worker-memory: one render's memory, the
	// 570 MiB that the render budgets' defaults allow (docs/design/
	// render-sandbox.md, "Memory") with room for the garbage collector.
	DefaultMemory int64 = 768 << 20
	// rendersPerWorker bounds the renders one worker serves before it is
	// replaced, so that whatever the heap kept (fragmentation, a cache of
	// a library) cannot grow for ever.
	rendersPerWorker = 1000
	// minWorkers is how many workers the pool keeps running when nothing
	// renders, so that a render never waits for a worker to start.
	minWorkers = 1
	// defaultScaleAfter is how long a render waits for a busy worker to
	// come back before the pool starts another (up to Options.Workers).
	// A small chart renders in a few milliseconds, so a burst of
	// HelmReleases at render-controller's --concurrent of 4 waits some
	// tens of milliseconds on one worker; on a machine short of CPU a
	// render stalls for most of a second now and then (measured at a load
	// average of 40 on 2 cores, pkg/bench/pool), and a second worker
	// would not make that one faster. Renders that take longer, or queue
	// deeper (a fleet of Kustomizations after a commit), get a second
	// worker within this much of their wait.
	defaultScaleAfter = time.Second
	// defaultIdleStop is how long a worker beyond minWorkers stays idle
	// before the pool stops it, handing its memory back: long enough that
	// the gaps of a steady load do not stop and start workers.
	defaultIdleStop = 30 * time.Second
)

// Options configure a Pool.
type Options struct {
	// Workers is how many renders may run at once, each in a worker
	// process of its own (--render-workers). Zero is DefaultWorkers.
	Workers int
	// Memory is each worker's memory limit in bytes
	// (--render-worker-memory). Zero is DefaultMemory.
	Memory int64
	// Command returns the worker's command; nil runs this program again
	// (os.Executable), which must call ServeIfWorker first thing. Tests
	// give another program to see how the pool takes a broken worker.
	Command func() *exec.Cmd
	// Log receives a line for each worker that ends other than by the
	// pool's choice.
	Log logr.Logger
	// MaxFileBytes is the largest file a worker may write (RLIMIT_FSIZE).
	// Zero, render-controller's: a render writes no file, and any write
	// fails. A chart worker writes the package (chartutil.Save), into a
	// folder the pool makes for each ChartPackage and removes after.
	MaxFileBytes int64
	// Names are the words of the pool's messages; zero fields are
	// render-controller's.
	Names Names

	// scaleAfter and idleStop are defaultScaleAfter and defaultIdleStop
	// when zero; the pool's tests shorten them.
	scaleAfter, idleStop time.Duration
}

// Names are the words a pool's failures are told in: what its work is,
// its workers, the flags that set their limits and the program, so that
// a message names the flag to change.
type Names struct {
	// Work is what a request does: "rendering".
	Work string
	// Worker is a worker: "render worker".
	Worker string
	// Timeout names the time limit: "--render-timeout".
	Timeout string
	// Workers and Memory name Options.Workers and Options.Memory:
	// "--render-workers", "--render-worker-memory".
	Workers string
	Memory  string
	// Program is the parent: "render-controller".
	Program string
}

// renderNames are render-controller's Names.
var renderNames = Names{
	Work:    "rendering",
	Worker:  "render worker",
	Timeout: "--render-timeout",
	Workers: "--render-workers",
	Memory:  "--render-worker-memory",
	Program: "render-controller",
}

// withDefaults fills the zero fields of n with render-controller's.
func (n Names) withDefaults() Names {
	for _, f := range []struct {
		field *string
		def   string
	}{
		{&n.Work, renderNames.Work}, {&n.Worker, renderNames.Worker}, {&n.Timeout, renderNames.Timeout},
		{&n.Workers, renderNames.Workers}, {&n.Memory, renderNames.Memory}, {&n.Program, renderNames.Program},
	} {
		if *f.field == "" {
			*f.field = f.def
		}
	}
	return n
}

// timeout names req's time limit.
func (n Names) timeout(req *request) string {
	if req.timeoutName != "" {
		return req.timeoutName
	}
	return n.Timeout
}

// Pool runs renders in worker processes with hard limits (doc.go).
// Its methods are safe for concurrent use; at most Workers renders run at
// once, the others wait for a free worker or for their context.
//
// The pool grows with its queue: it keeps one worker running, starts
// another when a render has waited scaleAfter for a busy one (up to
// Workers), and stops a worker beyond the first once it has been idle for
// idleStop. Every worker is the whole render-controller binary with a heap
// of its own, so a second worker that renders nothing a single one could
// not costs its memory for nothing (docs/design/render-sandbox.md,
// "Render workers").
type Pool struct {
	opts  Options
	slots chan struct{}

	mu     sync.Mutex
	idle   []*process
	closed bool
	// running counts the workers that are idle, busy or being started;
	// warming those being started for the idle list; starts the processes
	// ever started (tests, metrics).
	running int
	warming int
	starts  int64
	// startErr is why the last start of a worker failed; nil once one
	// started.
	startErr error
	// changed is closed, and replaced, whenever a worker goes idle or
	// stops, waking the renders that wait for one in take.
	changed chan struct{}
}

// NewPool returns a pool and starts its first worker in the background,
// so that the first render finds it ready.
func NewPool(opts Options) *Pool {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	if opts.MaxFileBytes < 0 {
		opts.MaxFileBytes = 0
	}
	if opts.scaleAfter <= 0 {
		opts.scaleAfter = defaultScaleAfter
	}
	if opts.idleStop <= 0 {
		opts.idleStop = defaultIdleStop
	}
	opts.Names = opts.Names.withDefaults()
	p := &Pool{opts: opts, slots: make(chan struct{}, opts.Workers), changed: make(chan struct{})}
	p.mu.Lock()
	for range min(minWorkers, opts.Workers) {
		p.warmInBackground()
	}
	p.mu.Unlock()
	return p
}

// Started is how many worker processes the pool has started.
func (p *Pool) Started() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Running is how many worker processes the pool has now: idle, rendering
// or being started.
func (p *Pool) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// Idle is how many workers are started and waiting for a render: a render
// that comes now costs no start of a worker.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Close stops the idle workers; a render in progress ends its worker when
// it returns. A closed pool renders nothing.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
}

// KustomizeOptions are Kustomize's arguments besides the spec: render.Options
// as they cross to a worker, which makes them render.Options again
// (renderOptions). They travel whole in the request, so a field added
// here reaches the worker without a copy in between.
type KustomizeOptions struct {
	Vars               render.Variables `json:"vars,omitempty"`
	StrictSubstitution bool             `json:"strictSubstitution,omitempty"`
	Limits             render.Limits    `json:"limits"`
	// Decryption, when set, are spec.decryption's keys: the worker makes
	// them render.Options.Decryptor.
	Decryption *Decryption `json:"decryption,omitempty"`
	// Share lets the worker keep kustomize's output for other builds of
	// the same work folder, path and spec fields (render.Options.Shared);
	// the caller promises workDir never changes. Never with Decryption.
	Share bool `json:"share,omitempty"`
}

// Kustomize is render.Build in a worker: the same result and errors, and
// a *render.Error of reason LimitExceeded when the worker passed its
// time, memory or CPU limit or died.
func (p *Pool) Kustomize(ctx context.Context, workDir string, spec *kustomizev1.KustomizationSpec, opts KustomizeOptions) (*render.Result, error) {
	// Decrypted output is never kept for other builds.
	opts.Share = opts.Share && opts.Decryption == nil
	req := &request{Kustomize: &kustomizeRequest{WorkDir: workDir, Spec: *spec, KustomizeOptions: opts}}
	resp, manifests, err := p.do(ctx, req, nil, opts.Limits.MaxOutputBytes)
	if err != nil {
		return nil, err
	}
	return &render.Result{Manifests: manifests, Objects: resp.IDs, Digest: resp.Digest}, nil
}

// Helm is helmrender.Render in a worker, with the errors Kustomize has.
func (p *Pool) Helm(ctx context.Context, archive []byte, opts helmrender.Options) (*helmrender.Result, error) {
	// Values that do not encode would fail the exchange and cost the
	// worker; say what is wrong instead (they cannot come from the API).
	if _, err := json.Marshal(opts.Values); err != nil {
		return nil, render.BuildError("the values do not encode as JSON: %v", err)
	}
	req := &request{Helm: &opts}
	if int64(len(archive)) > maxRequestBlob {
		return nil, render.LimitError("the chart archive is %d bytes, more than a render worker takes (%d)", len(archive), maxRequestBlob)
	}
	resp, manifests, err := p.do(ctx, req, [][]byte{archive}, opts.Limits.MaxOutputBytes)
	if err != nil {
		return nil, err
	}
	return &helmrender.Result{Manifests: manifests, Digest: resp.Digest, ChartName: resp.ChartName,
		ChartVersion: resp.ChartVersion, ConfigDigest: resp.ConfigDigest, Objects: len(resp.IDs), IDs: resp.IDs,
		Record: resp.Record, RecordOmitted: resp.RecordOmitted}, nil
}

// do runs req on a worker within ctx: it waits for a slot, takes an idle
// worker or starts one, and hands the worker back when it answered. A
// worker that passed a limit, died or answered garbage is killed and
// replaced in the background; its render fails with LimitExceeded.
func (p *Pool) do(ctx context.Context, req *request, blob [][]byte, maxOutput int64) (*response, []byte, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, p.waitErr(ctx, req)
	}
	defer func() { <-p.slots }()
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, nil, errors.New("a render needs a deadline")
	}
	req.Timeout = time.Until(deadline)
	if req.Timeout <= 0 {
		return nil, nil, p.waitErr(ctx, req)
	}
	w, err := p.take(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if maxOutput <= 0 {
		maxOutput = render.DefaultMaxOutputBytes
	}
	resp, manifests, err := w.roundTrip(ctx, req, blob, maxOutput)
	if err != nil {
		p.drop(w)
		return nil, nil, err
	}
	if resp.Exiting {
		p.drop(w)
	} else {
		p.give(w, false)
	}
	if resp.Error != nil {
		return nil, nil, resp.Error.err()
	}
	return resp, manifests, nil
}

// waitErr is the error of a render whose context ended before a worker
// took it.
func (p *Pool) waitErr(ctx context.Context, req *request) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		n := p.opts.Names
		return render.LimitError("%s did not finish within its time limit (%s): it waited for a free %s (%s) until then",
			n.Work, n.timeout(req), n.Worker, n.Workers)
	}
	return ctx.Err()
}

// take returns an idle worker, or waits for one. When none is idle it
// has one started in the background: at once when the pool has none,
// after waiting scaleAfter when all it has are busy and it may have more.
// It takes whichever is free first, the one started or a busy one come
// back, so a render never waits for a start when a worker frees sooner.
func (p *Pool) take(ctx context.Context, req *request) (*process, error) {
	scale := time.NewTimer(p.opts.scaleAfter)
	defer scale.Stop()
	waited, asked := false, false
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errors.New("the render pool is closed")
		}
		if n := len(p.idle); n > 0 {
			// The worker given back last: the others stay idle long
			// enough to be stopped when one worker keeps up.
			w := p.idle[n-1]
			p.idle = p.idle[:n-1]
			w.idleGen++
			p.mu.Unlock()
			return w, nil
		}
		if p.running == 0 && asked && p.startErr != nil {
			// The start this render asked for failed: say why rather
			// than start processes until the deadline.
			err := p.startErr
			p.mu.Unlock()
			return nil, err
		}
		// A worker being started is ready within moments: waiting for it
		// is no reason for one more.
		if p.running < p.opts.Workers && (p.running == 0 || waited && p.warming == 0) {
			p.warmInBackground()
			asked = true
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-scale.C:
			waited = true
		case <-ctx.Done():
			return nil, p.waitErr(ctx, req)
		}
	}
}

// wake tells the renders waiting in take that a worker went idle or
// stopped. p.mu is held.
func (p *Pool) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// give puts w back among the idle workers, or stops it when it has served
// its renders or the pool is closed. warmed says w comes from warm, whose
// count it leaves under the same lock, so that a render never sees it
// neither warming nor idle.
func (p *Pool) give(w *process, warmed bool) {
	p.mu.Lock()
	if warmed {
		p.warming--
	}
	if p.closed || w.renders >= rendersPerWorker {
		p.mu.Unlock()
		p.drop(w)
		return
	}
	p.idle = append(p.idle, w)
	w.idleGen++
	p.stopWhenIdle(w, w.idleGen)
	p.wake()
	p.mu.Unlock()
}

// stopWhenIdle stops w once it has stayed idle for idleStop since it was
// given back (gen: its idleGen then), unless the pool would keep
// fewer than minWorkers; then it looks again idleStop later. p.mu is held.
func (p *Pool) stopWhenIdle(w *process, gen int) {
	time.AfterFunc(p.opts.idleStop, func() {
		p.mu.Lock()
		i := slices.Index(p.idle, w)
		if p.closed || i < 0 || w.idleGen != gen {
			p.mu.Unlock()
			return // taken since, or the pool closed
		}
		if p.running <= minWorkers {
			p.stopWhenIdle(w, gen)
			p.mu.Unlock()
			return
		}
		p.idle = slices.Delete(p.idle, i, i+1)
		p.running--
		p.wake()
		p.mu.Unlock()
		w.stop()
	})
}

// drop stops w, which the pool no longer uses (it failed, is exiting,
// has served its renders, or the pool is closed), and starts another in
// the background when the pool would otherwise keep fewer than
// minWorkers.
func (p *Pool) drop(w *process) {
	w.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.wake()
	if !p.closed && p.running < minWorkers {
		p.warmInBackground()
	}
}

// warmInBackground starts a worker for the idle list without waiting.
// The counts of workers warming and running go up at once, so a render
// that comes next waits for this one rather than starting one more.
// p.mu is held.
func (p *Pool) warmInBackground() {
	p.warming++
	p.running++
	go p.warm()
}

// warm starts a worker for the idle list (warmInBackground counted it).
func (p *Pool) warm() {
	w, err := p.start()
	p.mu.Lock()
	p.startErr = err
	if err != nil {
		p.warming--
		p.running--
		p.wake()
		p.mu.Unlock()
		p.opts.Log.Error(err, "starting a "+p.opts.Names.Worker)
		return
	}
	p.mu.Unlock()
	p.give(w, true)
}

// start starts a worker process.
func (p *Pool) start() (*process, error) {
	cmd := p.command()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW)
		return nil, err
	}
	// The Go runtime's "fatal error" line comes first, what a library
	// printed last may come after it: keep both ends.
	stderr := capped.New(stderrBytes, capped.FirstAndLast)
	cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4
	cmd.Stdin = nil
	cmd.Stdout = stderr // a library's stray print must not break the protocol
	cmd.Stderr = stderr
	cmd.Env = append(cmd.Env, envWorker+"="+protocolVersion, envMemory+"="+strconv.FormatInt(p.opts.Memory, 10),
		envFileSize+"="+strconv.FormatInt(p.opts.MaxFileBytes, 10))
	setProcessAttributes(cmd)
	if err := cmd.Start(); err != nil {
		closeAll(reqR, reqW, respR, respW)
		return nil, fmt.Errorf("starting a render worker: %w", err)
	}
	closeAll(reqR, respW) // the worker's ends
	p.mu.Lock()
	p.starts++
	p.mu.Unlock()
	w := &process{
		pool:   p,
		cmd:    cmd,
		in:     reqW,
		out:    bufio.NewReaderSize(respR, 1<<16),
		outF:   respR,
		stderr: stderr,
		exited: make(chan struct{}),
	}
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// command is the worker's command: Options.Command, or this program with
// no arguments and an environment of nothing but the worker's settings,
// in the root folder.
func (p *Pool) command() *exec.Cmd {
	if p.opts.Command != nil {
		return p.opts.Command()
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{}
	cmd.Dir = "/"
	return cmd
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// setProcessAttributes makes the worker die with its parent (where the
// system can) and keeps it out of the parent's terminal signals.
func setProcessAttributes(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.SysProcAttr.Setpgid = true
}
