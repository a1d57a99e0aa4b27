package panics

import (
	"fmt"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var recovered = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "plumb_panics_recovered_total",
	Help: "Panics recovered in goroutines that handle untrusted input, by what the goroutine was doing.",
}, []string{"where"})

func init() {
	metrics.Registry.MustRegister(recovered)
}

// Error is a recovered panic.
type Error struct {
	// Where says what the goroutine was doing.
	Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack where it panicked.
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("panic while %s: %v", e.Where, e.Value) }

// Unwrap returns the panic value when it is an error (a runtime error,
// say), so errors.As finds it.
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred, turns a panic of the calling goroutine into an *Error
// in *err, then logs and counts it; without a panic it does nothing.
//
//	func apply(obj *unstructured.Unstructured) (err error) {
//		defer panics.Recover(&err, "apply")
//		…
//	}
func Recover(err *error, where string) {
	p := recover()
	if p == nil {
		return
	}
	*err = report(p, where)
}

// Log, deferred, recovers a panic of the calling goroutine, logs and counts
// it.
func Log(where string) {
	if p := recover(); p != nil {
		report(p, where)
	}
}

func report(p any, where string) *Error {
	e := &Error{Where: where, Value: p, Stack: debug.Stack()}
	recovered.WithLabelValues(where).Inc()
	ctrl.Log.WithName("panics").Error(e, "recovered a panic; the process goes on", "where", where, "stack", string(e.Stack))
	return e
}
