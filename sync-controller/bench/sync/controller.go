package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/options"
	"plumb.dev/sync-controller/internal/controller"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/fight"
)

// controllerOptions are the settings main.go takes from flags; the bench
// uses main.go's defaults unless told otherwise.
type controllerOptions struct {
	applyConcurrency int
	driftDebounce    time.Duration
	concurrent       int
	// fightWindow is --drift-fight-window; 0 is off.
	fightWindow time.Duration
}

// startController runs sync-controller in this process the way main.go
// wires it (app.NewManager, engine watcher, real event recorder and NATS
// publisher), with every API request counted by counter. It returns a stop
// function and the reconciler.
func startController(cfg *rest.Config, natsURL string, counter *requestCounter, o controllerOptions) (func(), error) {
	// main.go's shared flags at their defaults, then what a test
	// environment needs: no fixed ports.
	var mgrOpts options.Manager
	var natsOpts options.NATS
	fs := pflag.NewFlagSet("sync-controller", pflag.ContinueOnError)
	mgrOpts.BindFlags(fs)
	natsOpts.BindFlags(fs)
	// One process outside a cluster: no leader election (on by default).
	if err := fs.Parse([]string{"--metrics-addr=0", "--health-addr=0", "--nats-url=" + natsURL, "--enable-leader-election=false",
		fmt.Sprintf("--concurrent=%d", o.concurrent)}); err != nil {
		return nil, err
	}

	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = counter.wrap
	// What app.RESTConfig does when the API server has priority and
	// fairness on (envtest's has; checked in main): no client-side limit.
	cfg.QPS, cfg.Burst = -1, -1

	scheme := app.NewScheme()
	log := ctrl.Log.WithName(controller.ControllerName)
	appMgr, err := app.NewManager(controller.ControllerName, cfg, scheme, mgrOpts)
	if err != nil {
		return nil, err
	}
	// The fights and the other figures each run a controller of their own
	// in this process, one after the other.
	mgr := sameNameAgain{appMgr}
	watcher, err := engine.NewWatcher(cfg, scheme, mgr.GetRESTMapper(), o.driftDebounce, log.WithName("watcher"))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(watcher); err != nil {
		return nil, err
	}
	publisher, err := events.NewPublisher(natsOpts, controller.ControllerName, logr.Discard())
	if err != nil {
		return nil, err
	}
	r := &controller.KustomizationReconciler{Syncer: controller.Syncer{
		Client:            mgr.GetClient(),
		Reader:            mgr.GetAPIReader(),
		Engine:            engine.New(mgr.GetClient(), mgr.GetRESTMapper(), watcher, o.applyConcurrency),
		Events:            events.NewRecorder(mgr.GetEventRecorder(controller.ControllerName), publisher, scheme, controller.ControllerName),
		Fetch:             fetch.Options{Client: &http.Client{Timeout: time.Minute}, MaxSize: 64 << 20},
		DependencyRequeue: 10 * time.Second,
		Fight:             fight.Options{Window: o.fightWindow, FirstBackoff: 100 * time.Millisecond},
		// The remote cluster of the drift figure is on 127.0.0.1.
		AllowLoopbackKubeConfigServers: true,
	},
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.SetupWithManager(ctx, mgr, mgrOpts.Concurrent); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Println("manager:", err)
		}
		closeCtx, closeCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer closeCancel()
		_ = publisher.Close(closeCtx)
	}, nil
}

// sameNameAgain lets a later controller in this process take the name of
// one that was stopped (controller-runtime refuses a name used before).
type sameNameAgain struct{ ctrl.Manager }

func (m sameNameAgain) GetControllerOptions() ctrlconfig.Controller {
	o := m.Manager.GetControllerOptions()
	o.SkipNameValidation = ptr.To(true)
	return o
}

// requestCounter counts API requests by method and resource, and keeps when
// each started and how long it took until its response headers arrived.
type requestCounter struct {
	mu      sync.Mutex
	counts  map[string]int
	records []requestRecord
}

// requestRecord is one request since the last reset.
type requestRecord struct {
	kind     string
	start    time.Time
	duration time.Duration
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		key := requestKind(req)
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[key]++
		c.mu.Unlock()
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		c.mu.Lock()
		c.records = append(c.records, requestRecord{kind: key, start: start, duration: time.Since(start)})
		c.mu.Unlock()
		return resp, err
	})
}

// timeline splits the time from start (the trigger's write returning) to at
// (the watch seeing the outcome) by the controller's requests: until its
// first object write (or, with none, its status write), writing objects,
// from the last object write until the status write that ended the run
// returned, and until the watch delivered that status.
func (c *requestCounter) timeline(start, at time.Time) timeline {
	if c == nil {
		return timeline{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var firstObj, lastObj, statusStart, statusEnd time.Time
	var statusTook time.Duration
	for _, r := range c.records {
		end := r.start.Add(r.duration)
		switch {
		case strings.HasPrefix(r.kind, "PATCH kustomizations/status"):
			// The write that ended the run started before the watch saw
			// its outcome; its response may arrive after the event does.
			if r.start.Before(at) && r.start.After(statusStart) {
				statusStart, statusEnd, statusTook = r.start, end, r.duration
			}
		case strings.HasPrefix(r.kind, "PATCH ") || strings.HasPrefix(r.kind, "GET ") && r.kind != "GET kustomizations":
			if firstObj.IsZero() || r.start.Before(firstObj) {
				firstObj = r.start
			}
			if end.After(lastObj) {
				lastObj = end
			}
		}
	}
	if statusEnd.IsZero() {
		return timeline{}
	}
	t := timeline{known: true, delivery: at.Sub(statusEnd), status: statusTook}
	if firstObj.IsZero() {
		t.before = statusEnd.Sub(start)
		return t
	}
	t.before = firstObj.Sub(start)
	t.firstObject = firstObj
	t.objects = lastObj.Sub(firstObj)
	t.after = statusEnd.Sub(lastObj)
	return t
}

// timeline is where the time of one measured sync went.
type timeline struct {
	known    bool
	before   time.Duration // until the first object request (or the status write's end, with none)
	objects  time.Duration // first object request to the last one's response
	after    time.Duration // last object response to the final status write's response
	delivery time.Duration // that response to the watch event reaching the bench (negative when the event came first)
	status   time.Duration // the final status write's own request

	// The hand-off (before) split at the artifact's download, when it
	// was downloaded in the run: the trigger to the download's request
	// (watch delivery, queue, the steps before the manifests), the
	// download, and from its end to the first object request (verify,
	// decode, stamp, plan, the steps after).
	firstObject   time.Time
	split         bool
	toDownload    time.Duration
	download      time.Duration
	afterDownload time.Duration
}

// withDownload splits the hand-off at the artifact's download, when it
// fell between the trigger and the first object request.
func (t timeline) withDownload(start time.Time, dl span) timeline {
	if !t.known || t.firstObject.IsZero() || dl.start.Before(start) || dl.end.After(t.firstObject) {
		return t
	}
	t.split = true
	t.toDownload, t.download, t.afterDownload = dl.start.Sub(start), dl.end.Sub(dl.start), t.firstObject.Sub(dl.end)
	return t
}

func (t timeline) String() string {
	if !t.known {
		return "unknown"
	}
	if t.objects == 0 && t.after == 0 {
		return fmt.Sprintf("trigger to status written %s (the status write itself %s), then watch delivery %s",
			benchfig.Round(t.before), benchfig.Round(t.status), benchfig.Round(t.delivery))
	}
	handOff := benchfig.Round(t.before).String()
	if t.split {
		handOff += fmt.Sprintf(" (to the download %s, download %s, then decode and plan %s)",
			benchfig.Round(t.toDownload), benchfig.Round(t.download), benchfig.Round(t.afterDownload))
	}
	return fmt.Sprintf("trigger to first object request %s, object requests %s, to status written %s (the status write itself %s), watch delivery %s",
		handOff, benchfig.Round(t.objects), benchfig.Round(t.after), benchfig.Round(t.status), benchfig.Round(t.delivery))
}

// occupancy is how busy the workers were over the object requests since
// the last reset (every PATCH but a status write): the window from the
// first one's start to the last one's answer, and the requests' time in
// flight summed over it, divided by the window and the workers — 1.0 is
// every worker waiting on a request from the first to the last. It
// answers whether a side's requests ran at full concurrency or left
// workers idle (a kind group's tail, a worker's own work between two
// requests).
func (c *requestCounter) occupancy(workers int) occupancy {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first, last time.Time
	var inFlight time.Duration
	n := 0
	for _, r := range c.records {
		if !strings.HasPrefix(r.kind, "PATCH ") || strings.HasSuffix(strings.Fields(r.kind)[1], "/status") {
			continue
		}
		n++
		inFlight += r.duration
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if end := r.start.Add(r.duration); end.After(last) {
			last = end
		}
	}
	if n == 0 || workers < 1 || !last.After(first) {
		return occupancy{}
	}
	window := last.Sub(first)
	return occupancy{requests: n, window: window, busy: float64(inFlight) / float64(window) / float64(workers),
		perRequest: inFlight / time.Duration(n)}
}

// occupancy is requestCounter.occupancy's answer.
type occupancy struct {
	requests   int
	window     time.Duration
	busy       float64       // the workers' mean share of the window spent waiting on a request
	perRequest time.Duration // a request's mean time in flight
}

func (o occupancy) String() string {
	if o.requests == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d requests in %s, workers busy %.0f%%, %s per request", o.requests, benchfig.Round(o.window), 100*o.busy, benchfig.Round(o.perRequest))
}

func (c *requestCounter) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
	c.records = nil
}

// count returns the requests of one kind (requestKind) since the last reset.
func (c *requestCounter) count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}

// snapshot returns the total and the counts by kind of request; a nil
// counter (the binary's requests are not seen) counts nothing.
func (c *requestCounter) snapshot() (int, map[string]int) {
	if c == nil {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	out := make(map[string]int, len(c.counts))
	for k, n := range c.counts {
		out[k] = n
		total += n
	}
	return total, out
}

// formatCounts prints counts by kind, largest first.
func formatCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// requestKind names a request by method and resource (with subresource),
// leaving out namespaces and names: "PATCH configmaps (dry-run)",
// "GET kustomizations/status", "WATCH deployments".
func requestKind(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	default:
		return req.Method + " " + req.URL.Path
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	resource := strings.Join(rest[:min(len(rest), 1)], "")
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	if resource == "" {
		resource = "(discovery)"
	}
	method := req.Method
	q := req.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		method = "WATCH"
	}
	if method == http.MethodGet && len(rest) == 1 {
		method = "LIST"
	}
	kind := method + " " + resource
	if q.Get("dryRun") != "" {
		kind += " (dry-run)"
	}
	if (method == "WATCH" || method == "LIST") && q.Get("labelSelector") == "" && q.Get("fieldSelector") == "" {
		kind += " (unfiltered)"
	}
	return kind
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
