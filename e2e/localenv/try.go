package localenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"plumb.dev/pkg/kinds"
)

// TryCommand is one line of the launcher's "Try:" list: a shell command and
// what it shows.
type TryCommand struct {
	Command string
	Comment string
}

// String is the line as printed.
func (c TryCommand) String() string {
	if c.Comment == "" {
		return c.Command
	}
	return c.Command + "   # " + c.Comment
}

// TryCommands returns the commands the launcher suggests for a deployed
// sample, in order: each works as printed with `sh -c` from any folder
// (the e2e test TestTheTryCommandsWork runs them). cli is the plumb
// binary, "" to leave out its commands; workDir is where the sample is
// cloned.
func (e *Env) TryCommands(d *Demo, cli, workDir string) []TryCommand {
	var out []TryCommand
	if cli != "" {
		kc := "KUBECONFIG=" + e.Kubeconfig + " " + cli
		out = append(out,
			TryCommand{kc + " get kustomizations -A", "every Kustomization, Ready or why not"},
			TryCommand{fmt.Sprintf("%s tree kustomization demo -n %s", kc, d.Namespace), "what it applied, with health"},
			TryCommand{fmt.Sprintf("%s diff kustomization demo -n %s", kc, d.Namespace), "where the cluster differs from Git (exit 0: nowhere)"},
		)
		if d.ChartRepoURL != "" {
			out = append(out,
				TryCommand{kc + " get helmreleases -A", "the Helm sample: chart version, Ready or why not"},
				TryCommand{fmt.Sprintf("%s tree helmrelease hello -n %s", kc, d.Namespace), "what the release applied, with health"},
				TryCommand{fmt.Sprintf("%s get sources chart -n %s", kc, d.Namespace), "the HelmChart render-controller made for it"},
			)
		}
		out = append(out,
			TryCommand{fmt.Sprintf("%s events --nats-url %s -n %s", cli, e.NATSURL, d.Namespace), "the events the controllers published on NATS (--follow keeps going)"},
		)
	}
	out = append(out,
		TryCommand{fmt.Sprintf("git clone -q %s %s", d.PushURL, workDir), "with the credentials the Git server asks pushes for"},
		TryCommand{fmt.Sprintf("cd %s && sed -i 's/Hello from Plumb/Hello again/' configmap.yaml && git commit -qam greet && git push -q", workDir),
			"a push: webhook, artifact, render, apply"},
		TryCommand{fmt.Sprintf(`kubectl --kubeconfig %s -n %s patch configmap hello-config --type=merge -p '{"data":{"greeting":"edited by hand"}}'`, e.Kubeconfig, d.AppNamespace),
			"a foreign edit: reverted within a second, with an alert"},
	)
	if d.WebImage != "" {
		out = append(out, e.ImageTryCommands(d, cli, "1.0.1")...)
	}
	return out
}

// WaitDemoReady waits until every Plumb object of the sample is Ready, for
// as long as ctx allows, saying every 15 seconds which are not yet and why.
func (e *Env) WaitDemoReady(ctx context.Context, d *Demo) error {
	began, said := time.Now(), time.Now()
	for {
		var waiting []string
		for _, l := range e.DemoStatus(ctx, d) {
			if isPlumbKind(l.Kind) && l.Status != "Ready" {
				waiting = append(waiting, fmt.Sprintf("%s %s %s: %s", l.Kind, l.Name, l.Status, l.Detail))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			e.progress("still waiting for the sample to be Ready (%s):\n     %s", time.Since(began).Round(time.Second), strings.Join(waiting, "\n     "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sample was not Ready in %s:\n  %s", time.Since(began).Round(time.Second), strings.Join(waiting, "\n  "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// isPlumbKind says whether kind is one of Plumb's (pkg/kinds).
func isPlumbKind(kind string) bool {
	k, ok := kinds.Lookup(kind)
	return ok && k.GVK.Kind == kind
}
