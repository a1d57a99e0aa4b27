// Command pool measures what render-controller's worker pool costs under a
// Helm-only load: -n renders of a small chart (a Deployment, a Service and
// a ConfigMap, as the HelmRelease bench installs) through a
// renderworker.Pool of -workers, from -concurrency goroutines (the
// controller's --concurrent), each pausing -gap between its renders as a
// reconcile does for its downloads and status writes. It samples, every
// -every, the proportional set size (Pss, /proc/<pid>/smaps_rollup) of
// this process and of its workers and prints the peaks, the workers
// started, and the renders' latency (waiting for a worker included).
//
// It runs without an API server, so it fits a loaded machine where the
// whole bench (e2e/bench/helmrelease) does not; that bench gives the
// figure of record.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/pkg/testhelm"
)

var chartFiles = testhelm.Files{
	"values.yaml": "message: hello\nreplicas: 1\ncopies: 1\n",
	"templates/all.yaml": `{{- range $i := until (int .Values.copies) }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-settings-{{ $i }}
data:
  message: {{ $.Values.message | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $.Release.Name }}-{{ $i }}
spec:
  clusterIP: None
  selector: {app: {{ $.Release.Name }}}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $i }}
spec:
  replicas: {{ $.Values.replicas }}
  selector:
    matchLabels: {app: {{ $.Release.Name }}}
  template:
    metadata:
      labels: {app: {{ $.Release.Name }}}
      annotations:
        checksum/settings: {{ $.Values.message | sha256sum }}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0
          ports: [{containerPort: 8080}]
{{- end }}
`,
}

func main() {
	renderworker.ServeIfWorker()
	var (
		n           = flag.Int("n", 400, "Renders in all.")
		workers     = flag.Int("workers", renderworker.DefaultWorkers, "The pool's Workers (--render-workers).")
		concurrency = flag.Int("concurrency", 4, "Renders asked for at once (render-controller's --concurrent).")
		gap         = flag.Duration("gap", 20*time.Millisecond, "Each goroutine's pause between its renders.")
		every       = flag.Duration("every", 100*time.Millisecond, "How often memory is sampled.")
		copies      = flag.Int("copies", 1, "Copies of the three objects in each render: more makes each render slower, as a larger chart or a kustomize build is.")
	)
	flag.Parse()
	if err := run(*n, *workers, *concurrency, *copies, *gap, *every); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(n, workers, concurrency, copies int, gap, every time.Duration) error {
	archive, err := testhelm.Package(testhelm.Chart{Name: "web", Version: "1.0.0", Files: chartFiles})
	if err != nil {
		return err
	}
	pool := renderworker.NewPool(renderworker.Options{Workers: workers})
	defer pool.Close()
	time.Sleep(time.Second) // the first worker started

	stop := make(chan struct{})
	peak := make(chan sample, 1)
	go func() { peak <- sampleUntil(stop, every) }()

	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  int
		next      int
	)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t := time.Now()
				_, err := pool.Helm(ctx, archive, helmrender.Options{ReleaseName: fmt.Sprintf("app-%04d", i), Namespace: "bench",
					Values: map[string]any{"message": fmt.Sprintf("hello %d", i), "copies": copies}})
				cancel()
				mu.Lock()
				latencies = append(latencies, time.Since(t))
				if err != nil {
					failures++
				}
				mu.Unlock()
				time.Sleep(gap)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	p := <-peak
	slices.Sort(latencies)
	q := func(f float64) time.Duration {
		return latencies[int(f*float64(len(latencies)-1))].Round(time.Millisecond)
	}
	fmt.Printf("renders %d of %d objects (failed %d) in %s, %d at once, gap %s; workers: at most %d, started %d\n",
		n, 3*copies, failures, elapsed.Round(time.Millisecond), concurrency, gap, workers, pool.Started())
	fmt.Printf("latency p50 %s, p90 %s, max %s\n", q(0.5), q(0.9), q(1))
	fmt.Printf("peak Pss, this process + workers: %.1f MiB (this process %.1f, workers %.1f in %d, of it anonymous %.1f)\n",
		mib(p.self+p.workers), mib(p.self), mib(p.workers), p.count, mib(p.workersAnon))
	fmt.Printf("load average: %s\n", loadAverage())
	return nil
}

// sample is one reading of Pss in bytes: this process, its workers
// together and their anonymous part, and how many workers there were.
type sample struct {
	self, workers, workersAnon int64
	count                      int
}

// sampleUntil reads Pss every period until stop and returns the sample of
// the largest total.
func sampleUntil(stop <-chan struct{}, every time.Duration) sample {
	var best sample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s := sample{}
		s.self, _ = pss(os.Getpid())
		for _, child := range children(os.Getpid()) {
			total, anon := pss(child)
			s.workers += total
			s.workersAnon += anon
			s.count++
		}
		if s.self+s.workers > best.self+best.workers {
			best = s
		}
		select {
		case <-stop:
			return best
		case <-tick.C:
		}
	}
}

// pss returns a process's Pss and Pss_Anon in bytes.
func pss(pid int) (total, anon int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "Pss:":
			total = kb << 10
		case "Pss_Anon:":
			anon = kb << 10
		}
	}
	return total, anon
}

// children lists the pids of a process's children, over all its threads.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				pids = append(pids, c)
			}
		}
	}
	return pids
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
