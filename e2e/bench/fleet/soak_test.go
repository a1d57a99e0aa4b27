package main

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

// The plot is SVG a browser can read: well-formed XML, a polyline per
// controller in each of the four per-controller panels plus the watchers'
// and the drift's, each with a point per sample.
func TestSoakPlotHasALinePerControllerAndFigure(t *testing.T) {
	run := &soakRun{n: 10, duration: 3 * time.Minute, names: []string{"render-controller", "sync-controller"}}
	for i := range 4 {
		run.minutes = append(run.minutes, soakMinute{
			at:       time.Duration(i) * time.Minute,
			watchers: float64(40 + i),
			driftP99: time.Duration(i) * 100 * time.Millisecond,
			controllers: map[string]soakSample{
				"render-controller": {heapInuse: float64((i + 1) << 20), rssKiB: 1024, goroutines: 50, openFiles: 12},
				"sync-controller":   {heapInuse: 2 << 20, rssKiB: 2048, goroutines: 80, openFiles: 20},
			},
		})
	}
	doc := run.svg()
	dec := xml.NewDecoder(strings.NewReader(doc))
	lines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, doc)
			}
			break
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "polyline" {
			lines++
			for _, a := range el.Attr {
				if a.Name.Local == "points" && len(strings.Fields(a.Value)) != len(run.minutes) {
					t.Fatalf("a line of %d points, want %d: %s", len(strings.Fields(a.Value)), len(run.minutes), a.Value)
				}
			}
		}
	}
	if want := len(soakMetrics)*len(run.names) + 2; lines != want {
		t.Fatalf("%d lines, want %d", lines, want)
	}
}

// Growth is measured after the baseline, third against third: a heap
// that doubled after the baseline grew 100 %, one that stayed did not
// grow, and what came before the baseline does not count.
func TestSoakGrowthIsMeasuredAfterTheBaseline(t *testing.T) {
	run := &soakRun{names: []string{"a"}, baseline: 1}
	for _, heap := range []float64{1, 10, 10, 15, 15, 20, 20} {
		run.minutes = append(run.minutes, soakMinute{controllers: map[string]soakSample{"a": {heapInuse: heap, goroutines: 7}}})
	}
	if g := run.growth("a", soakMetrics[0].value); g != 1 {
		t.Errorf("heap growth %v, want 1 (10 → 20)", g)
	}
	if g := run.growth("a", soakMetrics[2].value); g != 0 {
		t.Errorf("goroutines growth %v, want 0", g)
	}
}

// Error lines are found in both of the controllers' log encodings, and
// only at error level or above.
func TestSoakCountsErrorLinesOfBothEncodings(t *testing.T) {
	for line, want := range map[string]bool{
		"2026-12-06T22:45:00.505Z\tERROR\tsync-controller\tReconciler error\t{\"error\": \"x\"}\n": true,
		"2026-12-06T22:45:00.505Z\tINFO\tsync-controller\tan ERROR in a message\n":                 false,
		`{"level":"error","ts":"2026-12-06T22:20:45Z","msg":"failed"}` + "\n":                      true,
		`{"level":"info","msg":"level error"}` + "\n":                                              false,
	} {
		if got := errorLine(line); got != want {
			t.Errorf("errorLine(%q) = %v, want %v", line, got, want)
		}
	}
}
