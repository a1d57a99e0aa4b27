package panics_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/pkg/panics"
)

func count(t *testing.T, where string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "plumb_panics_recovered_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == where {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// handle stands for a goroutine that reads untrusted input.
func handle(input map[string]any) (err error) {
	defer panics.Recover(&err, "test handle")
	_ = input["spec"].(map[string]any)["replicas"] // panics on input without a spec
	return nil
}

func TestAPanicInAGoroutineBecomesAnErrorAndTheProcessGoesOn(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, in := range []map[string]any{{"spec": map[string]any{"replicas": 1}}, {"kind": "hostile"}} {
		wg.Go(func() { errs[i] = handle(in) })
	}
	wg.Wait()
	if errs[0] != nil {
		t.Fatalf("good input: %v", errs[0])
	}
	var p *panics.Error
	if !errors.As(errs[1], &p) {
		t.Fatalf("bad input: want a *panics.Error, got %v", errs[1])
	}
	if want := "panic while test handle: interface conversion"; !strings.HasPrefix(p.Error(), want) {
		t.Errorf("message %q, want it to start with %q", p.Error(), want)
	}
	var rt runtime.Error
	if !errors.As(errs[1], &rt) {
		t.Errorf("the runtime error is not reachable through errors.As")
	}
	if !strings.Contains(string(p.Stack), "panics_test.handle") {
		t.Errorf("the stack does not show where it panicked:\n%s", p.Stack)
	}
	if got := count(t, "test handle"); got != 1 {
		t.Errorf("plumb_panics_recovered_total{where=%q} = %v, want 1", "test handle", got)
	}
}

func TestLogRecoversAHandlerPanic(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer panics.Log("test handler")
		panic("boom")
	}()
	<-done
	if got := count(t, "test handler"); got != 1 {
		t.Errorf("plumb_panics_recovered_total{where=%q} = %v, want 1", "test handler", got)
	}
}

func TestRecoverWithoutAPanicLeavesTheErrorAlone(t *testing.T) {
	want := errors.New("plain failure")
	f := func() (err error) {
		defer panics.Recover(&err, "test plain")
		return want
	}
	if err := f(); err != want {
		t.Fatalf("got %v, want %v", err, want)
	}
}
