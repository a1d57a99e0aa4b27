package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// logOptions are the flags of `plumb logs`.
type logOptions struct {
	kind, name   string
	allNS        bool
	level        string
	since        time.Duration
	tail         int
	follow       bool
	logDir       string
	ctrlNS       string
	container    string
	pollInterval time.Duration
	// An application's Pods instead of the controllers' logs
	// (logs_app.go): its objects' and hooks', or only its hooks'.
	kustomization, helmRelease string
	hooksOnly                  bool
	containerSet, tailSet      bool
}

func newLogsCmd(g *globals) *cobra.Command {
	o := logOptions{pollInterval: 200 * time.Millisecond}
	c := &cobra.Command{
		Use:   "logs [--kind Kind] [--name NAME] [-n NS] [--level info] [--since 1h] [--tail 50] [-f] | logs --kustomization NAME [--hook] [-n NS]",
		Short: "Print the controllers' log lines, filtered by object and level, or an application's Pods' logs",
		Long: "logs reads the controllers' logs — from their pods in --controller-namespace\n" +
			"(the pods/log subresource), or with --log-dir from the log files `make run`\n" +
			"writes (<state-dir>/logs/<controller>.log) — and prints the lines about one\n" +
			"kind, one object or one namespace, at or above a level, merged in time order.\n" +
			"It reads both the JSON lines of deploy/ (--log-encoding=json) and the console\n" +
			"lines of `make run`. -n narrows to the objects of a namespace (-A: every\n" +
			"namespace, the default without -n); with --kind, --name or -n, lines that are\n" +
			"about no object are left out.\n\n" +
			"With --kustomization NAME (or --helmrelease NAME) it prints instead the logs of\n" +
			"the Pods of that application's hooks and of the workloads in its inventory\n" +
			"(`argocd app logs`), each line prefixed [pod/NAME/CONTAINER], the last\n" +
			"--tail lines (100 unless given) of each container, at most 20 Pods;\n" +
			"--hook keeps only the hooks' Pods.",
		Example: "  plumb logs --kind Kustomization --name apps -n team-a --since 1h\n" +
			"  plumb logs --level error -f\n" +
			"  plumb logs --log-dir /tmp/plumb-local-123/logs --kind GitRepository\n" +
			"  plumb logs --kustomization demo -n plumb-demo --hook",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.kustomization != "" || o.helmRelease != "" {
				o.containerSet = cmd.Flags().Changed("container")
				o.tailSet = cmd.Flags().Changed("tail")
				return g.appLogs(cmd.Context(), o)
			}
			if o.hooksOnly {
				return errors.New("--hook needs --kustomization or --helmrelease")
			}
			f, err := o.filter(g)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			sources, err := g.logSources(ctx, o)
			if err != nil {
				return err
			}
			return streamLogs(ctx, g.out, sources, f, o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.kind, "kind", "", "Only lines about objects of this kind (GitRepository, HelmRepository, HelmChart, Kustomization, HelmRelease, Alert, Provider, Receiver; any case).")
	fl.StringVar(&o.name, "name", "", "Only lines about objects of this name.")
	fl.BoolVarP(&o.allNS, "all-namespaces", "A", false, "Lines about objects in every namespace (the default unless -n is given).")
	fl.StringVar(&o.level, "level", "", "Only lines at this level or above: debug, info or error (trace shows everything).")
	fl.DurationVar(&o.since, "since", 0, "Only lines newer than this (e.g. 30m); 0 reads the whole log.")
	fl.IntVar(&o.tail, "tail", -1, "Only the last N matching lines (before following); -1 shows them all.")
	fl.BoolVarP(&o.follow, "follow", "f", false, "Keep printing new lines until interrupted.")
	fl.StringVar(&o.logDir, "log-dir", "", "Read the log files in this folder (`make run`'s <state-dir>/logs) instead of the pods.")
	fl.StringVar(&o.ctrlNS, "controller-namespace", controllerNamespace, "Where the controllers' pods are.")
	fl.StringVar(&o.container, "container", "manager", "The controllers' container; with --kustomization or --helmrelease, only this container of each Pod (default: every container).")
	fl.StringVar(&o.kustomization, "kustomization", "", "Print the logs of the Pods of this Kustomization's objects and hooks (in -n) instead of the controllers'.")
	fl.StringVar(&o.helmRelease, "helmrelease", "", "Print the logs of the Pods of this HelmRelease's objects and hooks (in -n) instead of the controllers'.")
	fl.BoolVar(&o.hooksOnly, "hook", false, "With --kustomization or --helmrelease: only the Pods of its hooks (PreSync Jobs and the like).")
	return c
}

// logEntry is one parsed log line.
type logEntry struct {
	ts         time.Time
	level      string
	logger     string
	msg        string
	kind       string
	namespace  string
	name       string
	err        string
	controller string // the source: which controller wrote it
	raw        string
	parsed     bool
	// more are the lines after it that are not entries of their own (the
	// stack trace zap's console encoder writes below an error).
	more []string
}

// levels orders zap's level names; trace (Flux's Level(-2)) is below debug.
var levels = map[string]int{"trace": -2, "debug": -1, "info": 0, "warn": 1, "error": 2, "dpanic": 3, "panic": 4, "fatal": 5}

// levelOf normalises a level as the JSON ("info") or console ("INFO")
// encoders write it, and zap's "Level(-2)".
func levelOf(s string) string {
	s = strings.ToLower(s)
	if s == "level(-2)" {
		return "trace"
	}
	return s
}

// parseLogLine reads a line of a controller's log: JSON (deploy/) or zap's
// console encoding (`make run`): time, level, [logger,] message and a JSON
// object of the context, separated by tabs.
func parseLogLine(line string) logEntry {
	e := logEntry{raw: line}
	var fields map[string]any
	switch {
	case strings.HasPrefix(line, "{"):
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			return e
		}
		e.level = levelOf(str(fields["level"]))
		e.logger, e.msg = str(fields["logger"]), str(fields["msg"])
		e.ts = parseTime(str(fields["ts"]))
	default:
		parts := strings.Split(line, "\t")
		if len(parts) < 3 {
			return e
		}
		e.ts = parseTime(parts[0])
		if e.ts.IsZero() {
			return e
		}
		e.level = levelOf(parts[1])
		rest := parts[2:]
		if last := rest[len(rest)-1]; strings.HasPrefix(last, "{") && json.Unmarshal([]byte(last), &fields) == nil {
			rest = rest[:len(rest)-1]
		}
		e.msg = rest[len(rest)-1]
		if len(rest) > 1 {
			e.logger = rest[0]
		}
	}
	e.parsed = true
	e.kind = str(fields["controllerKind"])
	e.namespace, e.name = str(fields["namespace"]), str(fields["name"])
	if e.kind != "" {
		// controller-runtime's reconcile logger: "<Kind>": {name, namespace}.
		if ref, ok := fields[e.kind].(map[string]any); ok {
			if e.name == "" {
				e.name = str(ref["name"])
			}
			if e.namespace == "" {
				e.namespace = str(ref["namespace"])
			}
		}
	}
	e.err = str(fields["error"])
	return e
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func parseTime(s string) time.Time {
	for _, layout := range []string{"2006-01-02T15:04:05.000Z0700", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// logFilter decides which entries are shown.
type logFilter struct {
	kind, name, namespace string
	minLevel              int
	hasLevel              bool
	since                 time.Time
}

func (o logOptions) filter(g *globals) (logFilter, error) {
	f := logFilter{kind: o.kind, name: o.name}
	if !o.allNS {
		f.namespace = g.namespaceFlag()
	}
	if o.level != "" {
		l, ok := levels[levelOf(o.level)]
		if !ok {
			return f, fmt.Errorf("--level %q: want trace, debug, info or error", o.level)
		}
		f.minLevel, f.hasLevel = l, true
	}
	if o.since > 0 {
		f.since = time.Now().Add(-o.since)
	}
	if o.tail < -1 {
		return f, fmt.Errorf("--tail %d: want a count, or -1 for every line", o.tail)
	}
	return f, nil
}

// objectScoped is a filter that keeps only lines about objects.
func (f logFilter) objectScoped() bool { return f.kind != "" || f.name != "" || f.namespace != "" }

func (f logFilter) match(e logEntry) bool {
	if !e.parsed {
		// A line of no known shape (a panic's stack): kept only when
		// nothing narrows the output.
		return !f.objectScoped() && !f.hasLevel && f.since.IsZero()
	}
	if f.kind != "" && !strings.EqualFold(e.kind, f.kind) {
		return false
	}
	if f.name != "" && e.name != f.name {
		return false
	}
	if f.namespace != "" && e.namespace != f.namespace {
		return false
	}
	if f.hasLevel {
		l, ok := levels[e.level]
		if !ok || l < f.minLevel {
			return false
		}
	}
	return f.since.IsZero() || !e.ts.Before(f.since)
}

// format prints an entry: time, level, controller, object, message, error;
// with its continuation lines when withMore.
func (e logEntry) format(withMore bool) string {
	if !e.parsed {
		return e.raw
	}
	if withMore && len(e.more) > 0 {
		return e.format(false) + "\n" + strings.Join(e.more, "\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-5s  %s", e.ts.UTC().Format("2006-01-02T15:04:05.000Z"), e.level, e.controller)
	if e.kind != "" {
		obj := e.kind + "/"
		if e.namespace != "" {
			obj += e.namespace + "/"
		}
		fmt.Fprintf(&b, "  %s", obj+e.name)
	}
	fmt.Fprintf(&b, "  %s", e.msg)
	if e.err != "" {
		fmt.Fprintf(&b, "  error: %s", oneLine(e.err))
	}
	return b.String()
}

// logSource is one controller's log: what is there now, then what follows.
type logSource interface {
	controller() string
	// backlog returns the lines written so far.
	backlog(ctx context.Context) ([]string, error)
	// follow calls emit for each line written after the backlog, until
	// ctx ends.
	follow(ctx context.Context, emit func(string)) error
}

func (g *globals) logSources(ctx context.Context, o logOptions) ([]logSource, error) {
	if o.logDir != "" {
		var out []logSource
		for _, name := range controllers {
			p := filepath.Join(o.logDir, name+".log")
			if _, err := os.Stat(p); err == nil {
				out = append(out, &fileSource{name: name, path: p, poll: o.pollInterval})
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("--log-dir %s holds no controller log (%s.log, …): `make run` writes them to <state-dir>/logs", o.logDir, controllers[0])
		}
		return out, nil
	}
	if err := g.kube(); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	var out []logSource
	for _, name := range controllers {
		pods := &corev1.PodList{}
		if err := g.client.List(ctx, pods, client.InNamespace(o.ctrlNS), client.MatchingLabels{"app.kubernetes.io/name": name}); err != nil {
			return nil, fmt.Errorf("listing the pods of %s in %s: %w", name, o.ctrlNS, err)
		}
		for _, p := range pods.Items {
			out = append(out, &podSource{name: name, cs: cs, pod: p, container: o.container, since: o.since})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no controller pods in %s (labelled app.kubernetes.io/name=%s, …); under `make run` read its log files with --log-dir <state-dir>/logs", o.ctrlNS, controllers[0])
	}
	return out, nil
}

// streamLogs prints the matching backlog of every source merged in time
// order (the last o.tail of it), then, with o.follow, each new matching
// line as it comes until ctx ends.
func streamLogs(ctx context.Context, w io.Writer, sources []logSource, f logFilter, o logOptions) error {
	// Continuation lines are shown only when nothing narrows the output,
	// like lines of no known shape.
	withMore := f.match(logEntry{})
	var entries []logEntry
	var errs []error
	for _, s := range sources {
		ls, err := s.backlog(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.controller(), err))
			continue
		}
		var all []logEntry
		for _, l := range ls {
			e := parseLogLine(l)
			if !e.parsed && len(all) > 0 {
				all[len(all)-1].more = append(all[len(all)-1].more, l)
				continue
			}
			e.controller = s.controller()
			all = append(all, e)
		}
		for _, e := range all {
			if f.match(e) {
				entries = append(entries, e)
			}
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].ts.Before(entries[j].ts) })
	if o.tail >= 0 && len(entries) > o.tail {
		entries = entries[len(entries)-o.tail:]
	}
	for _, e := range entries {
		fmt.Fprintln(w, e.format(withMore))
	}
	if len(errs) > 0 && (len(errs) == len(sources) || !o.follow) {
		return fmt.Errorf("reading the logs: %w", errors.Join(errs...))
	}
	if !o.follow {
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ferrs := make([]error, len(sources))
	for i, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shown := false // whether the last entry of this source was shown
			ferrs[i] = s.follow(ctx, func(l string) {
				e := parseLogLine(l)
				if !e.parsed {
					if shown && withMore {
						mu.Lock()
						fmt.Fprintln(w, l)
						mu.Unlock()
					}
					return
				}
				e.controller = s.controller()
				if shown = f.match(e); shown {
					mu.Lock()
					fmt.Fprintln(w, e.format(false))
					mu.Unlock()
				}
			})
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // interrupted: the normal end of --follow
	}
	return errors.Join(ferrs...)
}

// fileSource is a log file that a process appends to (`make run`).
type fileSource struct {
	name   string
	path   string
	poll   time.Duration
	offset int64
}

func (s *fileSource) controller() string { return s.name }

func (s *fileSource) backlog(ctx context.Context) ([]string, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			// A partial last line is read again once it is complete.
			return out, nil
		}
		if err != nil {
			return out, err
		}
		s.offset += int64(len(line))
		out = append(out, strings.TrimRight(line, "\r\n"))
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
}

func (s *fileSource) follow(ctx context.Context, emit func(string)) error {
	var pending string
	buf := make([]byte, 64<<10)
	for {
		f, err := os.Open(s.path)
		if err != nil {
			return err
		}
		if fi, err := f.Stat(); err == nil && fi.Size() < s.offset {
			s.offset, pending = 0, "" // truncated or replaced: start over
		}
		for {
			n, err := f.ReadAt(buf, s.offset)
			s.offset += int64(n)
			pending += string(buf[:n])
			for {
				i := strings.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				emit(strings.TrimRight(pending[:i], "\r"))
				pending = pending[i+1:]
			}
			if err != nil || n == 0 {
				break
			}
		}
		f.Close()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.poll):
		}
	}
}

// podSource is a controller pod's log, through the API server's pods/log
// subresource (which asks the pod's kubelet).
type podSource struct {
	name      string
	cs        kubernetes.Interface
	pod       corev1.Pod
	container string
	since     time.Duration
	until     metav1.Time
}

func (s *podSource) controller() string { return s.name }

func (s *podSource) stream(ctx context.Context, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	opts.Container = s.container
	rc, err := s.cs.CoreV1().Pods(s.pod.Namespace).GetLogs(s.pod.Name, opts).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the log of pod %s/%s: %w", s.pod.Namespace, s.pod.Name, err)
	}
	return rc, nil
}

func (s *podSource) backlog(ctx context.Context) ([]string, error) {
	opts := &corev1.PodLogOptions{}
	if s.since > 0 {
		secs := int64(s.since.Seconds()) + 1
		opts.SinceSeconds = &secs
	}
	s.until = metav1.Now()
	rc, err := s.stream(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readLines(rc)
}

func (s *podSource) follow(ctx context.Context, emit func(string)) error {
	// From the second the backlog ended (the API's resolution).
	rc, err := s.stream(ctx, &corev1.PodLogOptions{Follow: true, SinceTime: &s.until})
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		emit(sc.Text())
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}
