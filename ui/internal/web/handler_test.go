package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerServesTheAppWithAStrictPolicy(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, tc := range []struct{ path, contentType string }{
		{"/", "text/html"},
		{"/app.js", "text/javascript"},
		{"/style.css", "text/css"},
		{"/pages/overview.js", "text/javascript"},
	} {
		res, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("GET %s: %s", tc.path, res.Status)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.contentType)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: Content-Security-Policy %q allows inline or eval", tc.path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", tc.path)
		}
	}
}

func TestHandlerServesNothingElse(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, path := range []string{"/nope.js", "/pages/", "/../go.mod"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, res.Status)
		}
	}
	res, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %s, want 405", res.Status)
	}
}

// TestNoScriptWritesHTML keeps the rule that data reaches the DOM only as
// text: no module may use innerHTML, outerHTML, insertAdjacentHTML or
// document.write.
func TestNoScriptWritesHTML(t *testing.T) {
	entries, err := static.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, "static/"+e.Name())
	}
	pages, _ := static.ReadDir("static/pages")
	for _, e := range pages {
		files = append(files, "static/pages/"+e.Name())
	}
	for _, name := range files {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		b, err := static.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
}
