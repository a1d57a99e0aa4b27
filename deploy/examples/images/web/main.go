// Command web is the sample application's web server
// (deploy/examples/app, deploy/examples/helm/hello): a page with a message
// and the server's version, /healthz for a liveness probe and /readyz for a
// readiness probe. Its behaviour comes from the environment, so that a
// commit to Git can change it the way a bad release would:
//
//	GREETING        the page's message
//	LISTEN          the address to listen on (default :8080: a non-root
//	                user cannot bind below 1024)
//	EXIT_AT_START   exit at once with this code (a crash loop)
//	READY_AFTER     report ready only after this long (a Go duration or
//	                seconds); "never" never does
//
// The flags -greeting, -listen, -exit-at-start and -ready-after override
// the environment. It
// writes nothing to disk (a read-only root filesystem is fine), needs no
// shell, and stops on SIGTERM after the requests in flight.
//
// It is built into an image by plumb.dev/pkg/imagebuild (docs/images.md);
// the builder links Version and Commit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Set by the image builder (-ldflags -X main.Version=…).
var (
	Version = "dev"
	Commit  = ""
)

// never is READY_AFTER's value for a server that never becomes ready.
const never = "never"

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	if err := run(); err != nil {
		log.Print("web: ", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func run() error {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: web [flags]\n\nThe sample app's web server. Each flag defaults to its environment variable (GREETING, LISTEN, EXIT_AT_START, READY_AFTER).\n\n")
		flag.PrintDefaults()
	}
	var (
		greeting    = flag.String("greeting", env("GREETING", "Hello"), "the page's message")
		listen      = flag.String("listen", env("LISTEN", ":8080"), "the address to listen on")
		exitAtStart = flag.String("exit-at-start", env("EXIT_AT_START", ""), "exit at once with this code, to make a crash loop")
		readyAfter  = flag.String("ready-after", env("READY_AFTER", "0"), `report ready only after this long (a duration or seconds); "never" never does`)
	)
	flag.Parse()

	log.Printf("web %s starting", versionString())
	if *exitAtStart != "" {
		code, err := strconv.Atoi(*exitAtStart)
		if err != nil || code < 0 || code > 255 {
			return fmt.Errorf("EXIT_AT_START=%q: want an exit code, 0 to 255", *exitAtStart)
		}
		log.Printf("exiting with code %d at start, as EXIT_AT_START says", code)
		os.Exit(code)
	}
	readyAt, err := readyTime(*readyAfter, time.Now())
	if err != nil {
		return err
	}

	srv := &http.Server{
		Addr:              *listen,
		Handler:           handler(*greeting, readyAt),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("listening on %s", *listen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Print("stopping")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// readyTime is when /readyz starts to answer 200; the zero time for never.
func readyTime(after string, now time.Time) (time.Time, error) {
	if after == never {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(after)
	if err != nil {
		secs, err2 := strconv.Atoi(after)
		if err2 != nil || secs < 0 {
			return time.Time{}, fmt.Errorf("READY_AFTER=%q: want a duration (10s), seconds or %q", after, never)
		}
		d = time.Duration(secs) * time.Second
	}
	if d < 0 {
		return time.Time{}, fmt.Errorf("READY_AFTER=%q is negative", after)
	}
	return now.Add(d), nil
}

func handler(greeting string, readyAt time.Time) http.Handler {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html>\n<title>%[1]s</title>\n<h1>%[1]s</h1>\n<p>web %[2]s, served by %[3]s</p>\n",
			html.EscapeString(greeting), html.EscapeString(Version), html.EscapeString(host))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if readyAt.IsZero() || time.Now().Before(readyAt) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, strings.TrimSpace(Version+" "+Commit))
	})
	return mux
}

// versionString is the version, with the commit when the builder set one.
func versionString() string {
	if Commit == "" {
		return Version
	}
	return Version + " (commit " + Commit + ")"
}
