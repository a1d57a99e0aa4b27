package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// The soak's targets (issue 45, item 3).
const (
	soakGrowthTarget  = 0.05
	soakDriftP99      = 500 * time.Millisecond
	soakSampleEvery   = time.Minute
	soakRevertTimeout = 30 * time.Second
	// soakFightMargin is the least time between two edits of one app:
	// twice sync-controller's default --drift-fight-window, so that the
	// edits are drift, not a fight over a field (which is corrected with
	// a backoff on purpose).
	soakFightMargin = time.Minute
)

// soakSample is one minute's sample of one controller.
type soakSample struct {
	heapInuse  float64 // go_memstats_heap_inuse_bytes
	rssKiB     int64   // VmRSS
	goroutines float64 // go_goroutines
	openFiles  int     // entries of /proc/PID/fd
	errorLines int     // error-level log lines in the minute before
	pid        int
}

// soakMinute is what was measured at one sample: each controller's
// figures, the API server's registered watchers, and the drift of the
// edits made in the minute before it.
type soakMinute struct {
	at          time.Duration // since the soak began
	controllers map[string]soakSample
	watchers    float64 // the API server's open watches, every client's
	edits       int
	missed      int
	driftP50    time.Duration
	driftP99    time.Duration
	load        string
}

// soakRun is the whole soak.
type soakRun struct {
	n        int
	duration time.Duration
	minutes  []soakMinute
	names    []string
	commits  int
	// baseline is the index of the sample growth is measured from.
	baseline int
}

// runSoak makes a fleet of n Ready, then for c.soak commits to a shared
// GitRepository once a minute and makes c.soakEditRate foreign edits a
// second, sampling every controller each minute.
func runSoak(ctx context.Context, c config, res *results) error {
	err := withEnv(ctx, c, envOptions{}, func(b *bench) error {
		s, err := b.soak(ctx, c.ns[0])
		res.soak = s
		return err
	})
	return res.finish(err)
}

func (b *bench) soak(ctx context.Context, n int) (*soakRun, error) {
	if err := b.readyFleet(ctx, n); err != nil {
		return nil, err
	}
	say("   soaking for %s: a commit a minute to %s, %d foreign edits a second", b.c.soak, repoName(0), b.c.soakEditRate)

	if again := time.Duration(n) * time.Second / time.Duration(b.c.soakEditRate); again < soakFightMargin {
		return nil, fmt.Errorf("-soak with -n %d and -soak-edit-rate %d edits each app again after %s, less than twice sync-controller's --drift-fight-window (30 s): repeated edits of one field are a fight, corrected with a backoff by design; use -n ≥ %d",
			n, b.c.soakEditRate, again, int(soakFightMargin.Seconds())*b.c.soakEditRate)
	}
	run := &soakRun{n: n, duration: b.c.soak, names: slices.Sorted(maps.Keys(b.env.Controllers))}
	logs := newLogCounter(b.env.Controllers)
	clone, cleanup, err := b.soakClone(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	vw, err := b.watchConfigMaps(ctx)
	if err != nil {
		return nil, err
	}
	defer vw.stop()
	time.Sleep(settle)

	sctx, stop := context.WithTimeout(ctx, b.c.soak)
	defer stop()
	began := time.Now()
	drift := &soakDrift{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); b.soakEdits(sctx, n, vw, drift, began) }()
	commits := 0
	var commitErr error
	go func() {
		defer wg.Done()
		commits, commitErr = b.soakCommits(sctx, clone)
	}()

	// The first sample is at the start, then one a minute, the last at the end.
	sample := func(i int) error {
		m, err := b.soakSample(ctx, logs)
		if err != nil {
			return err
		}
		m.at = time.Since(began)
		m.edits, m.missed, m.driftP50, m.driftP99 = drift.minute(i)
		m.load = benchfig.LoadAvg()
		run.minutes = append(run.minutes, m)
		say("   %s", run.line(len(run.minutes)-1))
		return nil
	}
	if err := sample(0); err != nil {
		return run, err
	}
	tick := time.NewTicker(soakSampleEvery)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-sctx.Done():
		case <-tick.C:
		}
		if sctx.Err() != nil {
			// The edits still in flight are waited for, then the last sample.
			wg.Wait()
			if err := sample(i); err != nil {
				return run, err
			}
			break
		}
		if err := sample(i); err != nil {
			return run, err
		}
		// With -profile-dir, the heaps at the baseline and at the end,
		// whose difference is what any growth is made of.
		if i == int(b.c.soakBaseline/soakSampleEvery) {
			b.heapProfiles(ctx, "soak-baseline")
		}
	}
	b.heapProfiles(ctx, "soak-end")
	// Each minute's drift again, now that every edit has its answer (an
	// edit late in a minute may have been reverted after that sample).
	for i := range run.minutes {
		m := &run.minutes[i]
		m.edits, m.missed, m.driftP50, m.driftP99 = drift.minute(i)
	}
	run.commits = commits
	run.baseline = min(int(b.c.soakBaseline/soakSampleEvery), len(run.minutes)-1)
	if commitErr != nil && !errors.Is(commitErr, context.DeadlineExceeded) && !errors.Is(commitErr, context.Canceled) {
		return run, fmt.Errorf("commits: %w", commitErr)
	}
	if b.c.soakOut != "" {
		if err := run.write(b.c.soakOut); err != nil {
			return run, err
		}
	}
	return run, nil
}

// soakClone clones the shared repository the commits go to.
func (b *bench) soakClone(ctx context.Context) (*localenv.Clone, func(), error) {
	work, err := os.MkdirTemp(b.env.StateDir, "soak-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(work) }
	clone, err := localenv.CloneRepo(ctx, b.env.Git.URL(repoName(0)), filepath.Join(work, repoName(0)))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return clone, cleanup, nil
}

// soakCommits pushes a commit a minute to the shared repository — a file
// beside the apps, so every Kustomization of the repository renders and
// syncs the new revision — and asks for its fetch, as a push webhook
// would; it returns how many it pushed.
func (b *bench) soakCommits(ctx context.Context, clone *localenv.Clone) (int, error) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return i - 1, ctx.Err()
		case <-tick.C:
		}
		if err := clone.Write(map[string]string{"soak/commit.txt": fmt.Sprintf("commit %d of the soak\n", i)}); err != nil {
			return i - 1, err
		}
		if _, err := clone.CommitAndPush(ctx, fmt.Sprintf("Soak commit %d", i)); err != nil {
			return i - 1, err
		}
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: repoName(0)}}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
		if err := b.fast.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return i, fmt.Errorf("asking for the fetch of commit %d: %w", i, err)
		}
	}
}

// soakDrift keeps each edit's revert latency by the minute it was made in.
type soakDrift struct {
	mu        sync.Mutex
	latencies map[int][]time.Duration
	missed    map[int]int
}

func (d *soakDrift) add(minute int, lat time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.latencies == nil {
		d.latencies, d.missed = map[int][]time.Duration{}, map[int]int{}
	}
	if ok {
		d.latencies[minute] = append(d.latencies[minute], lat)
	} else {
		d.missed[minute]++
	}
}

// minute returns the edits made in the minute before sample i, those not
// reverted within the timeout, and the p50 and p99 of the rest.
func (d *soakDrift) minute(i int) (edits, missed int, p50, p99 time.Duration) {
	if i == 0 {
		return 0, 0, 0, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ls := slices.Clone(d.latencies[i-1])
	missed = d.missed[i-1]
	if len(ls) == 0 {
		return missed, missed, 0, 0
	}
	return len(ls) + missed, missed, benchfig.Percentile(ls, 0.50), benchfig.Percentile(ls, 0.99)
}

// soakEdits makes soakEditRate foreign edits a second, round the fleet,
// until ctx ends, and times each revert (pkg/benchfig's AwaitRevert).
func (b *bench) soakEdits(ctx context.Context, n int, vw *valueWatch, d *soakDrift, began time.Time) {
	gap := time.Second / time.Duration(b.c.soakEditRate)
	next := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inFlight = map[string]bool{}
	)
	defer wg.Wait()
	// A stride prime to n spreads consecutive edits over the repositories.
	stride := 7919 % n
	if stride == 0 {
		stride = 1
	}
	for j := 0; ; j++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		next = next.Add(gap)
		t := editTarget{ns: appName((j * stride) % n), name: "config"}
		mu.Lock()
		busy := inFlight[t.key()]
		inFlight[t.key()] = true
		mu.Unlock()
		if busy {
			continue // the previous edit of this app is still being timed
		}
		done := func() {
			mu.Lock()
			delete(inFlight, t.key())
			mu.Unlock()
		}
		// The edit belongs to the minute it is made in, and is timed
		// past the soak's end.
		reverted, err := b.foreignEdit(context.WithoutCancel(ctx), vw, t, fmt.Sprintf("soak-%d", j))
		if err != nil {
			done()
			say("   soak edit: %v", err)
			continue
		}
		minute := int(time.Since(began) / soakSampleEvery)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			lat, err := reverted(soakRevertTimeout)
			d.add(minute, lat, err == nil)
		}()
	}
}

// soakSample samples every controller, and the API server's watchers.
func (b *bench) soakSample(ctx context.Context, logs *logCounter) (soakMinute, error) {
	m := soakMinute{controllers: map[string]soakSample{}}
	for name, c := range b.env.Controllers {
		pid := c.Pid()
		s := soakSample{pid: pid}
		proc, err := benchkit.ReadProc(pid)
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		s.rssKiB = proc.RSS
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		s.openFiles = len(fds)
		if s.heapInuse, err = b.controllerMetric(ctx, name, "go_memstats_heap_inuse_bytes"); err != nil {
			return m, err
		}
		if s.goroutines, err = b.controllerMetric(ctx, name, "go_goroutines"); err != nil {
			return m, err
		}
		if s.errorLines, err = logs.newErrors(name); err != nil {
			return m, err
		}
		m.controllers[name] = s
	}
	// apiserver_registered_watchers is gone from the API server; the
	// long-running requests of verb WATCH are the watches open now.
	lr, err := benchkit.ScrapeCounters(ctx, b.meter.APIClient, strings.TrimSuffix(b.env.Config.Host, "/")+"/metrics", "apiserver_longrunning_requests")
	if err != nil {
		return m, fmt.Errorf("kube-apiserver: %w", err)
	}
	for labels, v := range lr {
		if benchkit.Label(labels, "verb") == "WATCH" {
			m.watchers += v
		}
	}
	return m, nil
}

// logCounter counts the error-level lines each controller logged since
// it last looked, reading each log file from where it stopped.
type logCounter struct {
	paths   map[string]string
	offsets map[string]int64
}

func newLogCounter(cs map[string]*localenv.Controller) *logCounter {
	l := &logCounter{paths: map[string]string{}, offsets: map[string]int64{}}
	for name, c := range cs {
		l.paths[name] = c.LogPath
		if fi, err := os.Stat(c.LogPath); err == nil {
			l.offsets[name] = fi.Size() // what was logged before the soak is not counted
		}
	}
	return l
}

// errorLine says whether a log line is at error level or above: e2e/localenv
// starts the controllers with --log-encoding=console (time, a tab, the
// level in capitals, a tab, ...); the JSON encoding says "level":"error".
func errorLine(line string) bool {
	if fields := strings.SplitN(line, "\t", 3); len(fields) == 3 {
		switch fields[1] {
		case "ERROR", "DPANIC", "PANIC", "FATAL":
			return true
		}
	}
	return strings.Contains(line, `"level":"error"`)
}

func (l *logCounter) newErrors(name string) (int, error) {
	f, err := os.Open(l.paths[name])
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(l.offsets[name], io.SeekStart); err != nil {
		return 0, err
	}
	r := bufio.NewReader(f)
	count := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// A line still being written is read whole next time.
			break
		}
		l.offsets[name] += int64(len(line))
		if errorLine(line) {
			count++
			say("   error line of %s: %.300s", name, strings.TrimSpace(line))
		}
	}
	return count, nil
}

// line is sample i as one line of the log.
func (s *soakRun) line(i int) string {
	m := s.minutes[i]
	var b strings.Builder
	fmt.Fprintf(&b, "minute %d: drift %d edits p99 %s (missed %d); watchers %.0f;", int(m.at.Round(time.Minute)/time.Minute), m.edits, benchfig.Seconds(m.driftP99), m.missed, m.watchers)
	for _, name := range s.names {
		c := m.controllers[name]
		fmt.Fprintf(&b, " %s heap %.1f MiB rss %.1f MiB gr %.0f fd %d err %d;", strings.TrimSuffix(name, "-controller"), c.heapInuse/(1<<20), float64(c.rssKiB)/1024, c.goroutines, c.openFiles, c.errorLines)
	}
	fmt.Fprintf(&b, " load %s", m.load)
	return b.String()
}

// soakMetrics are the columns of the CSV and the panels of the plot, per
// controller.
var soakMetrics = []struct {
	name, unit string
	value      func(soakSample) float64
}{
	{"heap in use", "MiB", func(s soakSample) float64 { return s.heapInuse / (1 << 20) }},
	{"RSS", "MiB", func(s soakSample) float64 { return float64(s.rssKiB) / 1024 }},
	{"goroutines", "", func(s soakSample) float64 { return s.goroutines }},
	{"open files", "", func(s soakSample) float64 { return float64(s.openFiles) }},
}

// write writes soak.csv and soak.svg into dir.
func (s *soakRun) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "soak.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	header := []string{"minute", "edits", "missed", "drift_p50_s", "drift_p99_s", "apiserver_watches"}
	for _, name := range s.names {
		header = append(header, name+"_heap_inuse_bytes", name+"_rss_kib", name+"_goroutines", name+"_open_files", name+"_error_lines", name+"_pid")
	}
	_ = w.Write(header)
	for _, m := range s.minutes {
		row := []string{strconv.Itoa(int(m.at.Round(time.Minute) / time.Minute)), strconv.Itoa(m.edits), strconv.Itoa(m.missed),
			fmt.Sprintf("%.3f", m.driftP50.Seconds()), fmt.Sprintf("%.3f", m.driftP99.Seconds()), fmt.Sprintf("%.0f", m.watchers)}
		for _, name := range s.names {
			c := m.controllers[name]
			row = append(row, fmt.Sprintf("%.0f", c.heapInuse), strconv.FormatInt(c.rssKiB, 10), fmt.Sprintf("%.0f", c.goroutines),
				strconv.Itoa(c.openFiles), strconv.Itoa(c.errorLines), strconv.Itoa(c.pid))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "soak.svg"), []byte(s.svg()), 0o644)
}

// growth is how much a controller's figure grew after the baseline: the
// mean of the last third of the samples from the baseline on against the
// mean of the first third. One sample of the heap in use is noisy (how
// much garbage waits for the next collection: source-controller's read
// 10.0–15.7 MiB from minute to minute in soak trial 1), and a cache that
// is swept every few minutes saws; a leak raises the whole curve.
func (s *soakRun) growth(name string, value func(soakSample) float64) float64 {
	post := s.minutes[s.baseline:]
	k := max(1, len(post)/3)
	mean := func(ms []soakMinute) float64 {
		sum := 0.0
		for _, m := range ms {
			sum += value(m.controllers[name])
		}
		return sum / float64(len(ms))
	}
	first, last := mean(post[:k]), mean(post[len(post)-k:])
	if first == 0 {
		return 0
	}
	return (last - first) / first
}

// print prints the table per minute and the verdict.
func (s *soakRun) print(out io.Writer) {
	fmt.Fprintf(out, "soak: %d Kustomizations at rest for %s; %d commits, one a minute, to %s; foreign edits of the apps' ConfigMaps; each controller sampled every minute\n",
		s.n, s.duration, s.commits, repoName(0))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"minute", "edits", "drift p50", "drift p99", "missed", "API server watches"}
	for _, name := range s.names {
		short := strings.TrimSuffix(name, "-controller")
		header = append(header, short+" heap MiB", short+" RSS MiB", short+" goroutines", short+" fds", short+" errors")
	}
	header = append(header, "load average")
	writeHeader(tw, header)
	for _, m := range s.minutes {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%.0f", int(m.at.Round(time.Minute)/time.Minute), m.edits, benchfig.Seconds(m.driftP50), benchfig.Seconds(m.driftP99), m.missed, m.watchers)
		for _, name := range s.names {
			c := m.controllers[name]
			fmt.Fprintf(tw, "\t%.1f\t%.1f\t%.0f\t%d\t%d", c.heapInuse/(1<<20), float64(c.rssKiB)/1024, c.goroutines, c.openFiles, c.errorLines)
		}
		fmt.Fprintf(tw, "\t%s\n", m.load)
	}
	tw.Flush()
	if len(s.minutes) < 2 {
		return
	}
	fmt.Fprintf(out, "verdict (growth after minute %d: the mean of the last third of the samples from there against the first third's, target ≤ %.0f %%; drift p99 ≤ %s each minute; no error lines; the same pid throughout):\n",
		int(s.minutes[s.baseline].at.Round(time.Minute)/time.Minute), soakGrowthTarget*100, benchfig.Seconds(soakDriftP99))
	for _, name := range s.names {
		var parts []string
		ok := true
		for _, metric := range soakMetrics {
			g := s.growth(name, metric.value)
			parts = append(parts, fmt.Sprintf("%s %+.1f %%", metric.name, g*100))
			ok = ok && g <= soakGrowthTarget
		}
		errs, pids := 0, map[int]bool{}
		for _, m := range s.minutes {
			errs += m.controllers[name].errorLines
			pids[m.controllers[name].pid] = true
		}
		ok = ok && errs == 0 && len(pids) == 1
		fmt.Fprintf(out, "  %s: %s; %d error lines; %d pid(s): %s\n", name, strings.Join(parts, ", "), errs, len(pids), verdictOf(ok))
	}
	worst, missed := time.Duration(0), 0
	for _, m := range s.minutes {
		worst = max(worst, m.driftP99)
		missed += m.missed
	}
	fmt.Fprintf(out, "  drift: worst minute's p99 %s, %d edits not reverted within %s: %s\n",
		benchfig.Seconds(worst), missed, soakRevertTimeout, verdictOf(worst <= soakDriftP99 && missed == 0))
	fmt.Fprintln(out)
}
