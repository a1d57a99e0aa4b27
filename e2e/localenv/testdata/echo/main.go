// Command echo is the web server of the real node's test: it answers every
// request on :8080 with a line naming the Pod (its hostname), so a request
// through a Service shows which Pod served it.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	host, _ := os.Hostname()
	srv := &http.Server{
		Addr: ":8080",
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s\n", host)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
