package main

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

	"k8s.io/client-go/rest"

	"plumb.dev/e2e/localenv"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go runs on.
const clockTicks = 100

// procStat is what /proc says about one process at one moment.
type procStat struct {
	cpu time.Duration // utime + stime
	hwm int64         // VmHWM, KiB: the peak resident memory so far
	rss int64         // VmRSS, KiB
}

// readProc reads a process's CPU time and memory from /proc.
func readProc(pid int) (procStat, error) {
	var s procStat
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// pid (comm) state ppid …: comm may hold spaces, so count after ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// After ')': state is field 3 of stat(5), utime 14 and stime 15.
	if len(fields) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, fields[11], fields[12])
	}
	s.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
		}
		if name == "VmHWM" {
			s.hwm = kb
		} else {
			s.rss = kb
		}
	}
	return s, sc.Err()
}

// counters are Prometheus counters by their label set, as read from one
// /metrics scrape.
type counters map[string]float64

// scrapeCounters fetches a Prometheus text exposition and keeps the samples
// of the metric named; the key is the sample's label set as exposed.
func scrapeCounters(ctx context.Context, c *http.Client, url, metric string) (counters, error) {
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
	return parseCounters(resp.Body, metric)
}

// parseCounters reads the samples of one metric from the text format:
// `name{labels} value` or `name value`, comments skipped.
func parseCounters(r io.Reader, metric string) (counters, error) {
	out := counters{}
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
func (c counters) sub(before counters) counters {
	out := counters{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (c counters) total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// label returns the value of one label of a label set as exposed.
func label(set, name string) string {
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

// byKind sums the API server's request counters by "VERB resource[/sub]",
// resource requests only (the /metrics scrapes themselves are not).
func (c counters) byKind() map[string]float64 {
	out := map[string]float64{}
	for set, v := range c {
		res := label(set, "resource")
		if res == "" {
			continue
		}
		if sub := label(set, "subresource"); sub != "" {
			res += "/" + sub
		}
		out[label(set, "verb")+" "+res] += v
	}
	return out
}

// topKinds formats the largest entries of a by-kind map.
func topKinds(m map[string]float64, n int, per float64) string {
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

// snapshot is every counter the bench reads at one moment: the API
// server's requests, each controller's own requests (client-go's
// rest_client_requests_total on its metrics port) and each controller
// process's CPU time and memory.
type snapshot struct {
	at        time.Time
	apiserver counters
	client    map[string]float64 // controller → requests sent
	proc      map[string]procStat
}

// meter takes snapshots of one environment.
type meter struct {
	env       *localenv.Env
	apiClient *http.Client
	plain     *http.Client
	// plane are the control plane's processes by name: where the
	// controllers' requests cost CPU too.
	plane map[string]int
}

// The control plane's processes, as /proc/<pid>/comm names them.
var planeNames = []string{"kube-apiserver", "etcd"}

func newMeter(env *localenv.Env) (*meter, error) {
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 30 * time.Second
	m := &meter{env: env, apiClient: hc, plain: &http.Client{Timeout: 10 * time.Second}, plane: map[string]int{}}
	// envtest starts etcd and kube-apiserver as children of this process.
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || end < open {
			continue
		}
		comm, fields := string(stat[open+1:end]), strings.Fields(string(stat[end+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			for _, name := range planeNames {
				if comm == name {
					m.plane[name] = pid
				}
			}
		}
	}
	return m, nil
}

func (m *meter) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now(), client: map[string]float64{}, proc: map[string]procStat{}}
	var err error
	if s.apiserver, err = scrapeCounters(ctx, m.apiClient, strings.TrimSuffix(m.env.Config.Host, "/")+"/metrics", "apiserver_request_total"); err != nil {
		return s, fmt.Errorf("the API server's metrics: %w", err)
	}
	for name, c := range m.env.Controllers {
		got, err := scrapeCounters(ctx, m.plain, "http://"+c.MetricsAddr+"/metrics", "rest_client_requests_total")
		if err == nil {
			s.proc[name], err = readProc(c.Pid())
		}
		if err != nil {
			if c.Elects {
				// A leader killed on purpose (-ha) may be starting again.
				continue
			}
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.client[name] = got.total()
	}
	for name, pid := range m.plane {
		if s.proc[name], err = readProc(pid); err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
	}
	return s, nil
}

// delta is what happened between two snapshots.
type delta struct {
	d         time.Duration
	apiserver counters
	client    map[string]float64
	cpu       map[string]time.Duration
	hwm       map[string]int64 // at the end
}

func diff(before, after snapshot) delta {
	d := delta{d: after.at.Sub(before.at), apiserver: after.apiserver.sub(before.apiserver),
		client: map[string]float64{}, cpu: map[string]time.Duration{}, hwm: map[string]int64{}}
	for name := range after.proc {
		d.client[name] = after.client[name] - before.client[name]
		d.cpu[name] = after.proc[name].cpu - before.proc[name].cpu
		d.hwm[name] = after.proc[name].hwm
	}
	return d
}

// resourceRequests is the API server's count of resource requests (not
// /metrics, /healthz and the like).
func (d delta) resourceRequests() float64 {
	t := 0.0
	for _, v := range d.apiserver.byKind() {
		t += v
	}
	return t
}
