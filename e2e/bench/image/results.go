package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

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
