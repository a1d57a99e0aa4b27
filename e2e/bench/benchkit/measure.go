package benchkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/client-go/rest"

	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// ProcStat is what /proc says about one process at one moment.
type ProcStat struct {
	CPU time.Duration // utime + stime
	HWM int64         // VmHWM, KiB: the peak resident memory so far
	RSS int64         // VmRSS, KiB
}

// ReadProc reads a process's CPU time and memory from /proc.
func ReadProc(pid int) (ProcStat, error) {
	var s ProcStat
	p, err := procfs.NewProc(pid)
	if err != nil {
		return s, err
	}
	stat, err := p.Stat()
	if err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	s.CPU = benchfig.Ticks(int64(stat.UTime) + int64(stat.STime))
	status, err := p.NewStatus()
	if err != nil {
		return s, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	// procfs gives sizes in bytes; the figures have always been KiB.
	s.HWM, s.RSS = int64(status.VmHWM/1024), int64(status.VmRSS/1024)
	return s, nil
}

// Counters are Prometheus Counters by their label set, as read from one
// /metrics scrape.
type Counters map[string]float64

// ScrapeCounters fetches a Prometheus text exposition and keeps the samples
// of the metric named; the key is the sample's label set as exposed.
func ScrapeCounters(ctx context.Context, c *http.Client, url, metric string) (Counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return ParseCounters(resp.Body, metric)
}

// ParseCounters reads the samples of one metric from the text format:
// `name{labels} value` or `name value`, comments skipped.
func ParseCounters(r io.Reader, metric string) (Counters, error) {
	out := Counters{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		labels := ""
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric with this prefix
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		out[labels] += v
	}
	return out, sc.Err()
}

// sub returns c − before, per label set.
func (c Counters) Sub(before Counters) Counters {
	out := Counters{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (c Counters) Total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// label returns the value of one label of a label set as exposed.
func Label(set, name string) string {
	for _, kv := range splitLabels(set) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// splitLabels splits `a="x",b="y"` at the commas outside quotes.
func splitLabels(set string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(set); i++ {
		switch set[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, set[start:i])
				start = i + 1
			}
		}
	}
	if start < len(set) {
		out = append(out, set[start:])
	}
	return out
}

// byKind sums the API server's request Counters by "VERB resource[/sub]",
// resource requests only (the /metrics scrapes themselves are not).
func (c Counters) ByKind() map[string]float64 {
	out := map[string]float64{}
	for set, v := range c {
		res := Label(set, "resource")
		if res == "" {
			continue
		}
		if sub := Label(set, "subresource"); sub != "" {
			res += "/" + sub
		}
		out[Label(set, "verb")+" "+res] += v
	}
	return out
}

// TopKinds formats the largest entries of a by-kind map.
func TopKinds(m map[string]float64, n int, per float64) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for i, e := range all {
		if i == n {
			break
		}
		if per > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", e.k, e.v/per))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.0f", e.k, e.v))
		}
	}
	return strings.Join(parts, ", ")
}

// Snapshot is every counter the bench reads at one moment: the API
// server's requests, each measured process's own requests (client-go's
// rest_client_requests_total on its metrics port) and its CPU time and
// memory.
type Snapshot struct {
	At        time.Time
	APIServer Counters
	Client    map[string]float64 // process → requests sent
	Proc      map[string]ProcStat
}

// Process is a program the Meter measures: a controller, Plumb's or
// another's.
type Process struct {
	// MetricsURL serves its Prometheus metrics, client-go's among them.
	MetricsURL string
	// Pid is its current process id (a restarted process has a new one).
	Pid func() int
	// MayBeDown is set for a process that may be starting again while a
	// snapshot is taken (a leader killed on purpose): it is left out of
	// that snapshot instead of failing it.
	MayBeDown bool
}

// Meter takes snapshots of one environment: the API server's counters,
// the processes it was given and the control plane's processes.
type Meter struct {
	env       *localenv.Env
	APIClient *http.Client
	plain     *http.Client
	procs     map[string]Process
	// plane are the control plane's processes by name: where the
	// controllers' requests cost CPU too.
	plane map[string]int
}

// The control plane's processes, as /proc/<pid>/comm names them.
var PlaneNames = []string{"kube-apiserver", "etcd"}

// NewMeter measures env's controllers and its control plane.
func NewMeter(env *localenv.Env) (*Meter, error) {
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 30 * time.Second
	m := &Meter{env: env, APIClient: hc, plain: &http.Client{Timeout: 10 * time.Second}, procs: map[string]Process{}, plane: map[string]int{}}
	for name, c := range env.Controllers {
		m.procs[name] = Process{MetricsURL: "http://" + c.MetricsAddr + "/metrics", Pid: c.Pid, MayBeDown: c.Elects}
	}
	// envtest starts etcd and kube-apiserver as children of this process.
	children, err := localenv.ChildPids(os.Getpid())
	if err != nil {
		return nil, err
	}
	for _, pid := range children {
		p, err := procfs.NewProc(pid)
		if err != nil {
			continue // gone since the listing
		}
		stat, err := p.Stat()
		if err != nil {
			continue
		}
		for _, name := range PlaneNames {
			if stat.Comm == name {
				m.plane[name] = pid
			}
		}
	}
	return m, nil
}

// Add measures one more process from the next snapshot on.
func (m *Meter) Add(name string, p Process) { m.procs[name] = p }

// Forget stops measuring a process (one that was stopped on purpose).
func (m *Meter) Forget(name string) { delete(m.procs, name) }

// Snapshot reads every counter now.
func (m *Meter) Snapshot(ctx context.Context) (Snapshot, error) {
	s := Snapshot{At: time.Now(), Client: map[string]float64{}, Proc: map[string]ProcStat{}}
	var err error
	if s.APIServer, err = ScrapeCounters(ctx, m.APIClient, strings.TrimSuffix(m.env.Config.Host, "/")+"/metrics", "apiserver_request_total"); err != nil {
		return s, fmt.Errorf("the API server's metrics: %w", err)
	}
	children, err := processTree()
	if err != nil {
		return s, err
	}
	for name, p := range m.procs {
		got, err := ScrapeCounters(ctx, m.plain, p.MetricsURL, "rest_client_requests_total")
		if err == nil {
			s.Proc[name], err = readTree(p.Pid(), children)
		}
		if err != nil {
			if p.MayBeDown {
				continue
			}
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.Client[name] = got.Total()
	}
	for name, pid := range m.plane {
		if s.Proc[name], err = readTree(pid, children); err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
	}
	return s, nil
}

// readTree is ReadProc of pid with the CPU time of its whole tree
// (TreeCPU): a controller's render workers are processes of its own, and
// their renders its work. The memory is pid's own.
func readTree(pid int, children map[int][]int) (ProcStat, error) {
	s, err := ReadProc(pid)
	if err == nil {
		s.CPU = TreeCPU(pid, children)
	}
	return s, err
}

// CPU reads each measured process's and the control plane's CPU time,
// each with its tree's as in a Snapshot, from /proc alone, without the
// scrapes of a Snapshot: cheap enough to sample every second while a
// fleet syncs. A process that cannot be read (one starting again) is
// left out, and all are when /proc cannot be listed.
func (m *Meter) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	children, err := processTree()
	if err != nil {
		return out
	}
	for name, p := range m.procs {
		if st, err := readTree(p.Pid(), children); err == nil {
			out[name] = st.CPU
		}
	}
	for name, pid := range m.plane {
		if st, err := readTree(pid, children); err == nil {
			out[name] = st.CPU
		}
	}
	return out
}

// MetricsURL is where a measured process serves its Prometheus metrics;
// "" for a name the meter does not measure.
func (m *Meter) MetricsURL(name string) string { return m.procs[name].MetricsURL }

// Scrape reads one metric of a measured process (ScrapeCounters).
func (m *Meter) Scrape(ctx context.Context, name, metric string) (Counters, error) {
	return ScrapeCounters(ctx, m.plain, m.MetricsURL(name), metric)
}

// Delta is what happened between two snapshots.
type Delta struct {
	D         time.Duration
	APIServer Counters
	Client    map[string]float64
	CPU       map[string]time.Duration
	HWM       map[string]int64 // KiB, at the end
}

// Diff is what happened from before to after.
func Diff(before, after Snapshot) Delta {
	d := Delta{D: after.At.Sub(before.At), APIServer: after.APIServer.Sub(before.APIServer),
		Client: map[string]float64{}, CPU: map[string]time.Duration{}, HWM: map[string]int64{}}
	for name := range after.Proc {
		d.Client[name] = after.Client[name] - before.Client[name]
		d.CPU[name] = after.Proc[name].CPU - before.Proc[name].CPU
		d.HWM[name] = after.Proc[name].HWM
	}
	return d
}

// ResourceRequests is the API server's count of resource requests (not
// /metrics, /healthz and the like).
func (d Delta) ResourceRequests() float64 {
	t := 0.0
	for _, v := range d.APIServer.ByKind() {
		t += v
	}
	return t
}
