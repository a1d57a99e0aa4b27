// Command echo is the web server of the real node's tests: it answers every
// request on :8080 with a line naming the Pod (its hostname), so a request
// through a Service shows which Pod served it. GET /fetch?url=… makes the
// Pod itself request url and answers what came back (200 and the body) or
// why nothing did (502 and the error): the NetworkPolicy story asks one
// Pod to reach another, since policies judge the Pod a connection comes
// from.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"
)

// fresh opens a new connection for every fetch: a policy judges a
// connection when it opens, so one kept alive from before the policy
// would still pass.
var fresh = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func main() {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	mux.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		// Short: a connection a policy drops would otherwise hang until
		// the caller gives up, and the caller wants this Pod's answer.
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL.Query().Get("url"), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := fresh.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	})
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("serving on :8080 as %s", host)
	log.Fatal(srv.ListenAndServe())
}
