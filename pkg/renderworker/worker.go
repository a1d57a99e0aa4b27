package renderworker

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
)

// The environment a worker is started with: envWorker marks the process
// as a worker (its value is the protocol's version, so a parent and a
// worker of different builds never talk), envMemory is its memory budget
// in bytes, envFileSize the largest file it may write (0: none).
const (
	envWorker        = "PLUMB_RENDER_WORKER"
	envMemory        = "PLUMB_RENDER_WORKER_MEMORY"
	envFileSize      = "PLUMB_RENDER_WORKER_FILE_SIZE"
	protocolVersion  = "2"
	requestFD        = 3 // the parent's requests
	responseFD       = 4 // the worker's answers
	workerExitCPU    = 3 // the CPU limit was passed
	workerExitBroken = 4 // a request could not be read, or the setup failed
)

// The most stack one goroutine of a worker may use. Go's own default is
// 1 GiB, so a template walking a value that holds itself would first eat
// the memory budget; a 64 MiB stack is far more than any render needs
// (YAML deeper than 1,000 levels is refused) and ends such a walk with
// a clear "stack exceeds" crash.
const maxStackBytes = 64 << 20

// ServeIfWorker turns the process into a render worker when its parent
// started it as one, and never returns then; otherwise it returns at once.
// A program that renders through a Pool (render-controller, the plumb
// command line, a test binary) calls it first thing in main or TestMain,
// before it reads flags or starts anything.
func ServeIfWorker() {
	if os.Getenv(envWorker) == "" {
		return
	}
	os.Exit(serveWorker())
}

// serveWorker sets the worker's limits, then answers requests until the
// parent closes the request pipe. It returns the process's exit code.
func serveWorker() int {
	if os.Getenv(envWorker) != protocolVersion {
		fmt.Fprintf(os.Stderr, "render worker: protocol %q, this build speaks %q\n", os.Getenv(envWorker), protocolVersion)
		return workerExitBroken
	}
	memory, err := strconv.ParseInt(os.Getenv(envMemory), 10, 64)
	if err != nil || memory <= 0 {
		fmt.Fprintf(os.Stderr, "render worker: %s=%q is not a positive number of bytes\n", envMemory, os.Getenv(envMemory))
		return workerExitBroken
	}
	fileSize, err := strconv.ParseInt(os.Getenv(envFileSize), 10, 64)
	if err != nil || fileSize < 0 {
		fmt.Fprintf(os.Stderr, "render worker: %s=%q is not a number of bytes\n", envFileSize, os.Getenv(envFileSize))
		return workerExitBroken
	}
	if err := makeThreadsCheap(); err != nil {
		fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
		return workerExitBroken
	}
	// The limits come before the first byte of any request is read.
	if err := limitProcess(memory, fileSize); err != nil {
		fmt.Fprintf(os.Stderr, "render worker: setting its limits: %v\n", err)
		return workerExitBroken
	}
	debug.SetMaxStack(maxStackBytes)
	// A crash prints its reason, not the stacks: they say nothing the
	// reason does not, and their arguments are bits of the render's data.
	debug.SetTraceback("none")
	// The garbage collector works hard well before the address-space limit,
	// so a render that fits is not failed by garbage it left behind. Below
	// it, Go's default target: a worker collecting half as often (200) made
	// a 591-object chart render in 0.9× the time of an in-process render
	// instead of 1.1–1.2× (bench-helm), but each of the two workers then
	// held some 5 MiB more through a run of small renders
	// (bench-helmrelease: 91 against 81 MiB of proportional set size for
	// both; docs/bench/helm-release.md, "Memory, second pass"), and what
	// render-controller's renders take together is the figure measured
	// against helm-controller.
	debug.SetMemoryLimit(memory / 8 * 7)
	debug.SetGCPercent(100)
	render.LockDownProcess()
	go exitOnCPULimit()

	in := os.NewFile(requestFD, "requests")
	out := os.NewFile(responseFD, "responses")
	if in == nil || out == nil {
		fmt.Fprintln(os.Stderr, "render worker: started without its pipes")
		return workerExitBroken
	}
	w := &worker{shared: render.NewSharedBuilds(0), fileSize: fileSize}
	r := bufio.NewReaderSize(in, 1<<16)
	// An idle worker hands its heap back to the system, so that what it
	// holds between renders is what it started with. Not after every
	// answer: a busy worker would then map and fault its heap in again for
	// each render (measured: a 591-object chart 15 % slower).
	idle := time.AfterFunc(time.Hour, debug.FreeOSMemory)
	for {
		var req request
		blob, err := readMessage(r, &req, maxRequestBlob)
		idle.Stop()
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "render worker: reading a request: %v\n", err)
			return workerExitBroken
		}
		resp, manifests := w.handle(&req, blob)
		blob, req = nil, request{}
		if err := writeMessage(out, resp, manifests); err != nil {
			fmt.Fprintf(os.Stderr, "render worker: answering: %v\n", err)
			return workerExitBroken
		}
		if resp.Exiting {
			// The render was abandoned at its deadline and may still run
			// in a goroutine nothing can stop: only the process's end
			// stops it.
			return 0
		}
		resp, manifests = nil, nil
		idle.Reset(idleFree)
	}
}

// exitOnCPULimit ends the worker when it passes the CPU limit of its
// render (limitCPU): the kernel's SIGXCPU, which Go would otherwise
// ignore.
func exitOnCPULimit() {
	if len(sigCPULimit) == 0 {
		return // signal.Notify with no signal would take every signal
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigCPULimit...)
	<-c
	fmt.Fprintln(os.Stderr, "render worker: CPU time limit exceeded")
	os.Exit(workerExitCPU)
}

// worker is the state a worker keeps between renders: only kustomize's
// output for the trees that never change (render.SharedBuilds, keyed by
// everything that decides it). Decryption keys, values and results live
// in one handle call.
type worker struct {
	shared *render.SharedBuilds
	// fileSize is the largest file the worker may write (RLIMIT_FSIZE),
	// for the messages of a package past it.
	fileSize int64
}

// handle runs one request and returns the answer and the manifests.
//
// The render's own deadline is workerGrace after the parent's, so the
// parent is the one that stops a render at its deadline (by killing the
// worker); should the worker's come first all the same, the worker says
// it is exiting and does, since the abandoned render may run on.
func (w *worker) handle(req *request, blob []byte) (resp *response, manifests []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), req.Timeout+workerGrace)
	defer cancel()
	defer func() {
		if ctx.Err() != nil {
			resp.Exiting = true
		}
	}()
	if err := limitCPU(req.Timeout + workerGrace); err != nil {
		return &response{Error: &responseError{Reason: reasonLimit, Message: fmt.Sprintf("setting the render's CPU limit: %v", err)}}, nil
	}
	if kinds(req) != 1 {
		return &response{Error: &responseError{Reason: reasonBuild, Message: "a render request must name exactly one of a kustomization, a chart to render, to plan or to package, or a plugin render"}}, nil
	}
	switch {
	case req.Kustomize != nil:
		return w.kustomize(ctx, req.Kustomize)
	case req.Helm != nil:
		return helm(ctx, req.Helm, blob)
	case req.ChartPlan != nil:
		return chartPlan(ctx, req.ChartPlan, blob)
	case req.Plugin != nil:
		return pluginRender(ctx, req.Plugin)
	default:
		return w.chartPackage(ctx, req.ChartPackage, blob)
	}
}

// kinds counts the kinds of work a request names.
func kinds(req *request) int {
	n := 0
	for _, set := range []bool{req.Kustomize != nil, req.Helm != nil, req.ChartPlan != nil, req.ChartPackage != nil, req.Plugin != nil} {
		if set {
			n++
		}
	}
	return n
}

// idleFree is how long a worker waits for the next request before it
// hands its heap back to the system.
const idleFree = 2 * time.Second

// workerGrace is how much later than the parent a worker gives up on its
// render.
const workerGrace = time.Second

func (w *worker) kustomize(ctx context.Context, req *kustomizeRequest) (*response, []byte) {
	opts, err := req.renderOptions(w.shared)
	if err != nil {
		return &response{Error: &responseError{Reason: reasonDecryption, Message: err.Error()}}, nil
	}
	res, err := render.Build(ctx, req.WorkDir, &req.Spec, opts)
	if err != nil {
		return &response{Error: errorOf(err)}, nil
	}
	return &response{IDs: res.Objects, Digest: res.Digest}, res.Manifests
}

// renderOptions are o as render.Build takes them in the worker: the
// decryption keys parsed (an error is theirs), the worker's shared builds
// when o shares. TestEveryKustomizeOptionReachesTheBuild fails when a
// field of render.Options is not set from o.
func (o *KustomizeOptions) renderOptions(shared *render.SharedBuilds) (render.Options, error) {
	opts := render.Options{
		Vars:               o.Vars,
		StrictSubstitution: o.StrictSubstitution,
		Limits:             o.Limits,
	}
	if d := o.Decryption; d != nil {
		keys := &decrypt.Keys{Secret: d.Secret}
		if d.Data != nil {
			var err error
			if keys, err = decrypt.ParseKeys(d.Secret, d.Data); err != nil {
				return opts, err
			}
		}
		opts.Decryptor = decrypt.New(keys)
	} else if o.Share {
		opts.Shared = shared
	}
	return opts, nil
}

func helm(ctx context.Context, opts *helmrender.Options, archive []byte) (*response, []byte) {
	res, err := helmrender.Render(ctx, archive, *opts)
	if err != nil {
		return &response{Error: errorOf(err)}, nil
	}
	return &response{IDs: res.IDs, Digest: res.Digest, ChartName: res.ChartName, ChartVersion: res.ChartVersion,
		ConfigDigest: res.ConfigDigest, Record: res.Record, RecordOmitted: res.RecordOmitted}, res.Manifests
}

// source returns the request's helmpackage.Source and the rest of the
// blob after the chart's archive.
func (s chartSource) source(blob []byte) (helmpackage.Source, []byte, error) {
	parts, err := splitBlob(blob, s.ArchiveBytes, int64(len(blob))-s.ArchiveBytes)
	if err != nil {
		return helmpackage.Source{}, nil, err
	}
	src := helmpackage.Source{Root: s.Root, Dir: s.Dir, Name: s.Name}
	if s.ArchiveBytes > 0 {
		src.Archive = parts[0]
	}
	return src, parts[1], nil
}

// inputs returns the request's source and remote archives, cut from blob.
func (req *chartPackageRequest) inputs(blob []byte) (helmpackage.Source, map[helmpackage.Dependency][]byte, error) {
	src, rest, err := req.Source.source(blob)
	if err != nil {
		return src, nil, err
	}
	lengths := make([]int64, len(req.Remote))
	for i, r := range req.Remote {
		lengths[i] = r.Bytes
	}
	archives, err := splitBlob(rest, lengths...)
	if err != nil {
		return src, nil, err
	}
	remote := make(map[helmpackage.Dependency][]byte, len(req.Remote))
	for i, r := range req.Remote {
		remote[r.Dependency.Key()] = archives[i]
	}
	return src, remote, nil
}

// inputs returns the request's source, cut from blob.
func (req *chartPlanRequest) inputs(blob []byte) (helmpackage.Source, error) {
	src, rest, err := req.Source.source(blob)
	if err == nil && len(rest) > 0 {
		err = errors.New("a chart plan request carries bytes besides the chart's archive")
	}
	return src, err
}

func chartPlan(ctx context.Context, req *chartPlanRequest, blob []byte) (*response, []byte) {
	src, err := req.inputs(blob)
	if err != nil {
		return &response{Error: &responseError{Reason: reasonBuild, Message: err.Error()}}, nil
	}
	plan, err := helmpackage.MakePlan(ctx, src, req.Limits)
	if err != nil {
		return &response{Error: errorOf(err)}, nil
	}
	return &response{ChartName: plan.Name, ChartVersion: plan.Version, Remote: plan.Remote, Digest: digestOf(nil)}, nil
}

func (w *worker) chartPackage(ctx context.Context, req *chartPackageRequest, blob []byte) (*response, []byte) {
	src, remote, err := req.inputs(blob)
	if err != nil {
		return &response{Error: &responseError{Reason: reasonBuild, Message: err.Error()}}, nil
	}
	res, err := helmpackage.Build(ctx, src, helmpackage.Options{
		ValuesFiles:              req.ValuesFiles,
		IgnoreMissingValuesFiles: req.IgnoreMissing,
		Version:                  req.Version,
		Remote:                   remote,
		OutDir:                   req.OutDir,
	}, req.Limits)
	if errors.Is(err, syscall.EFBIG) {
		// RLIMIT_FSIZE: the package passed the largest file the worker
		// may write.
		return &response{Error: &responseError{Reason: reasonLimit,
			Message: fmt.Sprintf("the packaged chart is larger than the limit of %d bytes", w.fileSize)}}, nil
	}
	if err != nil {
		return &response{Error: errorOf(err)}, nil
	}
	return &response{ChartName: res.Name, ChartVersion: res.Version, ValuesFiles: res.ValuesFiles, Digest: digestOf(res.Archive)}, res.Archive
}

// digestOf is the digest an answer's blob is checked against.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
