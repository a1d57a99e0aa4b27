package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/pkg/listen"
)

// inherited reports whether an address flag names an inherited socket
// (plumb.dev/pkg/listen's fd:N), which controller-runtime's own metrics and
// health servers cannot serve on: they take an address to bind.
func inherited(addr string) bool { return strings.HasPrefix(addr, listen.FDPrefix) }

// addMetricsServer serves /metrics of controller-runtime's registry on the
// inherited socket addr, as controller-runtime's metrics server would.
func addMetricsServer(mgr ctrl.Manager, addr string) error {
	l, err := listen.Listen(addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	return mgr.Add(httpServer("metrics", mux, l))
}

// probeManager is a manager whose /healthz and /readyz are served on an
// inherited socket: it keeps the checks the controller adds and serves them
// as controller-runtime's health probe server would.
type probeManager struct {
	ctrl.Manager

	mu      sync.Mutex
	started bool
	healthz map[string]healthz.Checker
	readyz  map[string]healthz.Checker
}

func withInheritedProbes(mgr ctrl.Manager, addr string) (ctrl.Manager, error) {
	l, err := listen.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("--health-addr: %w", err)
	}
	pm := &probeManager{Manager: mgr, healthz: map[string]healthz.Checker{}, readyz: map[string]healthz.Checker{}}
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": pm.healthz, "/readyz": pm.readyz} {
		h := http.StripPrefix(path, pm.handler(checks))
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	if err := mgr.Add(httpServer("health probe", mux, l)); err != nil {
		return nil, err
	}
	return pm, nil
}

// handler serves checks once the manager starts; checks are added before.
func (pm *probeManager) handler(checks map[string]healthz.Checker) http.Handler {
	h := &healthz.Handler{Checks: checks}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pm.mu.Lock()
		pm.started = true
		pm.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (pm *probeManager) add(checks map[string]healthz.Checker, name string, check healthz.Checker) error {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.started {
		return errors.New("unable to add a health check once the probes are served")
	}
	checks[name] = check
	return nil
}

// AddHealthzCheck adds a liveness check served at /healthz.
func (pm *probeManager) AddHealthzCheck(name string, check healthz.Checker) error {
	return pm.add(pm.healthz, name, check)
}

// AddReadyzCheck adds a readiness check served at /readyz.
func (pm *probeManager) AddReadyzCheck(name string, check healthz.Checker) error {
	return pm.add(pm.readyz, name, check)
}

// httpServer is a manager runnable serving h on l on every replica, shut
// down within ten seconds when the manager stops.
func httpServer(name string, h http.Handler, l net.Listener) *manager.Server {
	shutdown := 10 * time.Second
	return &manager.Server{
		Name:            name,
		Server:          &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		Listener:        l,
		ShutdownTimeout: &shutdown,
	}
}
