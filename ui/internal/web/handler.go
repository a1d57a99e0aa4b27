package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// securityPolicy allows the page's own scripts, styles, images and API calls
// and nothing else: no inline script or style, no other origin, no framing.
// The UI builds its DOM with textContent, so this is the second wall, not
// the first.
const securityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the single-page application: index.html for "/" and the
// assets under their own paths. Any other path is 404, not index.html: the
// routes are in the hash, so a server path the app does not have is a
// mistake worth seeing.
func Handler() http.Handler {
	root, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	index, err := fs.ReadFile(root, "index.html")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", securityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// The assets change with the binary and carry no version in their
		// names, so the browser revalidates them (ETag-less embed files
		// revalidate by Last-Modified, which embed leaves zero: no-cache
		// keeps a new binary's assets from being hidden by an old copy).
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		files.ServeHTTP(w, r)
	})
}
