package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

type results struct {
	c            config
	webhook      []*round
	interval     *round
	floor        []time.Duration
	load0, load1 string
	source       string
}

// finish prints what was measured, also when an error ended the run early.
func (r *results) finish() {
	r.load1 = benchfig.LoadAvg()
	r.print(os.Stdout)
}

func (r *results) print(out io.Writer) {
	fmt.Fprintf(out, "\nImage automation benchmark: a new tag of the sample's web image in the launcher's registry, to the Deployment carrying it;\n")
	fmt.Fprintf(out, "e2e/localenv as `make run` starts it (pod simulator, five controllers as processes); %s\n", r.source)
	fmt.Fprintf(out, "load average at the start %s, at the end %s\n\n", r.load0, r.load1)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "from the tag written to …\truns\tp50\tp90\tmax\t\n")
	row := func(label string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t\n", label, len(ds),
			benchfig.Seconds(benchfig.Round(benchfig.Percentile(ds, 50))),
			benchfig.Seconds(benchfig.Round(benchfig.Percentile(ds, 90))),
			benchfig.Seconds(benchfig.Round(benchfig.Percentile(ds, 100))))
	}
	stageRows := func(way string, rounds []*round) {
		for _, s := range stages {
			var ds []time.Duration
			for _, rd := range rounds {
				if d, ok := rd.at[s]; ok {
					ds = append(ds, d)
				}
			}
			row(way+": "+stageNames[s], ds)
		}
	}
	stageRows("webhook", r.webhook)
	if r.interval != nil {
		stageRows(fmt.Sprintf("no webhook, interval %s", r.c.scanInterval), []*round{r.interval})
	}
	row("floor: tag, resolve, commit and push, apply (controllers idle)", r.floor)
	_ = w.Flush()
	if len(r.webhook) > 0 && len(r.floor) > 0 {
		var ds []time.Duration
		for _, rd := range r.webhook {
			ds = append(ds, rd.at["deployment"])
		}
		p50, f50 := benchfig.Percentile(ds, 50), benchfig.Percentile(r.floor, 50)
		fmt.Fprintf(out, "\nwebhook p50 to the Deployment %s against the floor's %s: %.1f× (target ≤ 5 s)\n",
			benchfig.Seconds(benchfig.Round(p50)), benchfig.Seconds(benchfig.Round(f50)), p50.Seconds()/f50.Seconds())
	}
}

// sourceState names the commit measured, and whether the programs of the
// chain had uncommitted changes.
func sourceState() string {
	root, err := localenv.RepoRoot()
	if err != nil {
		return "?"
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	dirty, _ := exec.Command("git", "-C", root, "status", "--porcelain", "--",
		"image-controller", "notification-controller", "source-controller", "render-controller", "sync-controller", "pkg", "api").Output()
	if len(strings.TrimSpace(string(dirty))) > 0 {
		return "commit " + strings.TrimSpace(string(head)) + " with uncommitted changes to the controllers, pkg or api"
	}
	return "commit " + strings.TrimSpace(string(head))
}
