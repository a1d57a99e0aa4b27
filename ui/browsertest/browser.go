package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is where Debian's chromium package installs the browser.
const Chromium = "/usr/bin/chromium"

// StepTimeout bounds one step (a navigation, a wait, a click). Waits are
// polls with this deadline, never sleeps.
var StepTimeout = 20 * time.Second

// TB is what a Browser needs of its caller: a *testing.T or *testing.B,
// or a benchmark program's stand-in (ui/bench/ui), which is not a
// test and so cannot have a testing.TB.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

var _ TB = testing.TB(nil)

// Browser is one headless chromium with one tab, for one test.
type Browser struct {
	t     TB
	ctx   context.Context
	shots string

	mu       sync.Mutex
	problems []string
}

// Start starts chromium for t (it stops at the end of the test) with a
// laptop-sized window.
func Start(t TB) *Browser {
	t.Helper()
	path := os.Getenv("PLUMB_CHROMIUM")
	if path == "" {
		path = Chromium
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no browser at %s (%v): run `make chromium` to install Debian's chromium package", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1440, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root; CI containers are root.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{t: t, ctx: ctx, shots: os.Getenv("PLUMB_UI_SCREENSHOTS")}
	// The first Run starts the browser; it must not carry a step timeout.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	consoleCtx, stopConsole := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(consoleCtx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s: %s", m.Type, m.Text))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		stopConsole()
		<-done
		cancel()
		cancelAlloc()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported %s", p)
		}
	})
	return b
}

// Do runs browser steps, failing the test on the first error.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// Go opens url and waits for sel to be visible.
func (b *Browser) Go(url, sel string) {
	b.t.Helper()
	b.Do("opening "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// WaitVisible waits for the first element matching the CSS selector sel to be visible.
func (b *Browser) WaitVisible(sel string) {
	b.t.Helper()
	b.Do("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// Eventually waits until the JavaScript expression js is truthy.
func (b *Browser) Eventually(what, js string) {
	b.t.Helper()
	b.Do("waiting until "+what, chromedp.Poll[chromedp.Void](js,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(StepTimeout)))
}

// Click clicks the first element matching sel, once it is visible.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	b.Do("clicking "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// Type focuses sel and types text into it as key presses.
func (b *Browser) Type(sel, text string) {
	b.t.Helper()
	b.Do("typing into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// SetValue selects value in the <select> sel, as a user would, firing change.
func (b *Browser) SetValue(sel, value string) {
	b.t.Helper()
	b.Do("choosing "+value+" in "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event('change', {bubbles: true})); })()`, sel, value)))
}

// Focus focuses sel.
func (b *Browser) Focus(sel string) {
	b.t.Helper()
	b.Do("focusing "+sel, chromedp.Focus(chromedp.CSS(sel)))
}

// Key presses keys (see chromedp/kb for the names of special keys) on the focused element.
func (b *Browser) Key(keys string) {
	b.t.Helper()
	b.Do(fmt.Sprintf("pressing %q", keys), chromedp.KeyEvent(keys))
}

// Text returns the text of the first element matching sel, waiting for it.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel))
}

// Count returns how many elements match sel now.
func (b *Browser) Count(sel string) int {
	b.t.Helper()
	return Eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// Eval evaluates the JavaScript expression js in the page and decodes its value.
func Eval[T any](b *Browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// Screenshot saves the viewport as name.png in the screenshots folder, if there is one.
func (b *Browser) Screenshot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}
