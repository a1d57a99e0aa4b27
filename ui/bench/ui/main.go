package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/server"
)

// firstRow is the overview's first row with real content: rendered (not a
// placeholder of the virtual list still loading) and named.
const firstRow = ".overview-list .vrow:not(.loading)"

// firstScreenJS resolves, once the first row is visible with a name, to
// performance.now() at that animation frame: milliseconds since this
// page's navigation started.
const firstScreenJS = `new Promise((resolve) => {
  const shown = () => {
    const row = document.querySelector(` + "`" + firstRow + "`" + `);
    return row && row.offsetParent !== null && (row.querySelector('.name')?.textContent || '') !== '';
  };
  const check = () => shown() ? resolve(performance.now()) : requestAnimationFrame(check);
  check();
})`

func main() {
	var (
		kustomizations = flag.Int("kustomizations", 1000, "Kustomizations to create.")
		namespaces     = flag.Int("namespaces", 20, "Namespaces to spread them over.")
		runs           = flag.Int("runs", 10, "Page loads (and API requests) measured.")
	)
	flag.Parse()
	if err := run(fleet{namespaces: *namespaces, kustomizations: *kustomizations}, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench-ui:", err)
		os.Exit(1)
	}
}

func run(f fleet, runs int) (err error) {
	t := &benchT{}
	defer t.finish(&err)

	env, err := testenv.Start()
	if err != nil {
		return err
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	start := time.Now()
	if err := f.create(ctx, env.Client); err != nil {
		return fmt.Errorf("creating the fleet: %w", err)
	}
	created := time.Since(start)

	ui, err := server.New(ctx, server.Options{Auth: server.AuthKubeconfig, Config: env.Config, NATS: options.NATS{URL: env.NATSURL}})
	if err != nil {
		return err
	}
	t.Cleanup(ui.Close)
	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)

	// The browser signs in with the one-time secret, then the Go client
	// with the next one; both are the administrator.
	b := browsertest.Start(t)
	b.Go(srv.URL+"/"+strings.TrimPrefix(ui.LoginURL(), "/"), firstRow)
	api, err := signIn(srv.URL, ui.LoginSecret())
	if err != nil {
		return err
	}
	// The server's watch has listed everything before New returned;
	// check the overview has every row before measuring.
	page, _, err := api.overview(1)
	if err != nil {
		return err
	}
	if page.Total != f.objects() {
		return fmt.Errorf("the overview has %d rows, want %d", page.Total, f.objects())
	}

	var screens, firstPages []time.Duration
	var rows, inView int
	var pageBytes int
	for i := 0; i < runs; i++ {
		b.Do("leaving the page", chromedp.Navigate("about:blank"))
		b.Do("opening the overview", chromedp.Navigate(srv.URL+"/#/"))
		ms := browsertest.Eval[float64](b, firstScreenJS)
		screens = append(screens, time.Duration(ms*float64(time.Millisecond)))
		rows = browsertest.Eval[int](b, `document.querySelectorAll('.overview-list .vrow').length`)
		inView = browsertest.Eval[int](b, `document.querySelectorAll('`+firstRow+`').length`)

		start := time.Now()
		_, n, err := api.overview(100)
		if err != nil {
			return err
		}
		firstPages = append(firstPages, time.Since(start))
		pageBytes = n
	}

	fmt.Printf("ui benchmark: %d Kustomizations and %d GitRepositories in %d namespaces (created with status in %s), %d runs, %s/%s, GOMAXPROCS %d, load average at the end %s\n\n",
		f.kustomizations, f.namespaces*reposPerNamespace, f.namespaces, created.Round(time.Millisecond), runs,
		runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), loadAverage())
	row := func(figure, median, fastest string) { fmt.Printf("| %-62s | %9s | %9s |\n", figure, median, fastest) }
	row("figure", "median", "fastest")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", 64), strings.Repeat("-", 11), strings.Repeat("-", 11))
	row("first screen of rows in chromium (navigation to rows)", msOf(median(screens)), msOf(slices.Min(screens)))
	row(fmt.Sprintf("API's first page alone (GET /api/overview?limit=100, %d KiB)", pageBytes>>10), msOf(median(firstPages)), msOf(slices.Min(firstPages)))
	row("ratio first screen / first page", ratio(median(screens), median(firstPages)), ratio(slices.Min(screens), slices.Min(firstPages)))
	fmt.Printf("\nrows in the DOM at the first screen: %d (%d with content) of %d in the overview; first page load (cold cache) %s\n",
		rows, inView, f.objects(), msOf(screens[0]))
	return nil
}

// apiClient is the Go side's session: a cookie jar signed in.
type apiClient struct {
	base string
	http *http.Client
	// csrf is the session's X-Plumb-CSRF value, which every /api/
	// request carries, as the page's do.
	csrf string
}

func signIn(base, secret string) (*apiClient, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &apiClient{base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	body, _ := json.Marshal(map[string]string{"secret": secret})
	resp, err := c.http.Post(base+"/api/login", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("signing in: %d %s", resp.StatusCode, data)
	}
	var session struct {
		CSRF string `json:"csrf"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&session); err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	c.csrf = session.CSRF
	return c, nil
}

// overviewPage is the part of GET /api/overview's answer the bench reads.
type overviewPage struct {
	Total int               `json:"total"`
	Items []json.RawMessage `json:"items"`
}

// overview gets the first page of limit rows, decoded as the browser
// would, and its size.
func (c *apiClient) overview(limit int) (overviewPage, int, error) {
	var page overviewPage
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/overview?limit=%d", c.base, limit), nil)
	if err != nil {
		return page, 0, err
	}
	req.Header.Set("X-Plumb-CSRF", c.csrf)
	resp, err := c.http.Do(req)
	if err != nil {
		return page, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return page, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return page, 0, fmt.Errorf("GET /api/overview: %d %s", resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return page, 0, err
	}
	if len(page.Items) != min(limit, page.Total) {
		return page, 0, fmt.Errorf("GET /api/overview?limit=%d gave %d rows of %d", limit, len(page.Items), page.Total)
	}
	return page, len(data), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func msOf(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

// loadAverage is /proc/loadavg's first three figures, what else the
// shared machine was doing.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

// benchT is browsertest.TB for a program: a failure stops the run
// (Fatal unwinds to finish), cleanups run at the end, last first.
type benchT struct {
	cleanups []func()
	errs     []string
}

// fatal is the panic value Fatal unwinds with.
type fatal struct{ msg string }

func (t *benchT) Helper()                           {}
func (t *benchT) Fatal(args ...any)                 { panic(fatal{fmt.Sprint(args...)}) }
func (t *benchT) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }
func (t *benchT) Errorf(format string, args ...any) {
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}
func (t *benchT) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *benchT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

func (t *benchT) TempDir() string {
	dir, err := os.MkdirTemp("", "plumb-bench-ui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// finish turns a Fatal into *err, runs the cleanups and adds the errors
// they reported (the page's exceptions, from browsertest).
func (t *benchT) finish(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(fatal)
		if !ok {
			panic(r)
		}
		*err = errors.New(f.msg)
	}
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	if len(t.errs) > 0 && *err == nil {
		*err = errors.New(strings.Join(t.errs, "; "))
	}
}
