package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestThePageCarriesTheGreetingEscapedAndTheVersion(t *testing.T) {
	Version = "1.2.3"
	h := handler("Hello <b>you</b>", time.Now())
	code, body := get(t, h, "/")
	if code != http.StatusOK || !strings.Contains(body, "Hello &lt;b&gt;you&lt;/b&gt;") || !strings.Contains(body, "web 1.2.3") {
		t.Fatalf("GET / = %d %q", code, body)
	}
	if code, _ := get(t, h, "/nothing"); code != http.StatusNotFound {
		t.Fatalf("GET /nothing = %d, want 404", code)
	}
}

func TestReadinessWaitsAsReadyAfterSays(t *testing.T) {
	now := time.Now()
	later, err := readyTime("1h", now)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		readyAt time.Time
		want    int
	}{
		"ready":   {now, http.StatusOK},
		"not yet": {later, http.StatusServiceUnavailable},
		"never":   {time.Time{}, http.StatusServiceUnavailable},
	} {
		h := handler("hi", tc.readyAt)
		if code, _ := get(t, h, "/readyz"); code != tc.want {
			t.Errorf("%s: /readyz = %d, want %d", name, code, tc.want)
		}
		if code, _ := get(t, h, "/healthz"); code != http.StatusOK {
			t.Errorf("%s: /healthz = %d, want 200 (alive while not ready)", name, code)
		}
	}
	if at, err := readyTime("30", now); err != nil || !at.Equal(now.Add(30*time.Second)) {
		t.Errorf("READY_AFTER=30: %v %v, want seconds", at, err)
	}
	if at, err := readyTime("never", now); err != nil || !at.IsZero() {
		t.Errorf("READY_AFTER=never: %v %v", at, err)
	}
	for _, bad := range []string{"soon", "-5s", "-3"} {
		if _, err := readyTime(bad, now); err == nil {
			t.Errorf("READY_AFTER=%s accepted", bad)
		}
	}
}
