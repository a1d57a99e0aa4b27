package cmd

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// rowWords is a table row's words without its AGE (the fourth).
func rowWords(row string) []string {
	f := strings.Fields(row)
	if len(f) > 4 {
		f = append(f[:3:3], f[4:]...)
	}
	return f
}

func TestGetStatusSelector(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ready, broken, fresh := gitRepo(ns, "ready"), gitRepo(ns, "broken"), gitRepo(ns, "fresh")
	create(ctx, t, ready, broken, fresh)
	setStatus(ctx, t, ready, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored", o.Generation)}
	})
	setStatus(ctx, t, broken, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", sourcev1.AuthenticationFailedReason, "bad token", o.Generation)}
	})

	names := func(args ...string) []string {
		r := plumb(append(args, "-n", ns)...)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		var out []string
		for _, l := range lines(r.out)[1:] {
			out = append(out, strings.Fields(l)[0])
		}
		return out
	}
	g.Expect(names("get", "sources", "git", "--status-selector", "ready=false")).To(Equal([]string{"broken"}))
	g.Expect(names("get", "sources", "git", "--status-selector", "Ready=True")).To(Equal([]string{"ready"}))
	// Without the condition, an object is not ready=true: != keeps it.
	g.Expect(names("get", "sources", "git", "--status-selector", "ready!=true")).To(Equal([]string{"broken", "fresh"}))
	g.Expect(names("get", "all", "--status-selector", "ready=false")).To(Equal([]string{"gitrepository/broken"}))

	r := plumb("get", "sources", "git", "-n", ns, "--status-selector", "stalled=true")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(BeEmpty())
	g.Expect(r.errOut).To(ContainSubstring("No GitRepositories matching stalled=true found in namespace " + ns))

	for _, bad := range []string{"ready", "=true", "ready=", "a=b=c"} {
		r := plumb("get", "sources", "git", "-n", ns, "--status-selector", bad)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("want TYPE=STATUS or TYPE!=STATUS"))
	}
}

func TestGetWatchPrintsARowPerChange(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	app := gitRepo(ns, "app")
	create(ctx, t, app)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- Run(wctx, []string{"--kubeconfig", kubeconfig, "get", "sources", "git", "-n", ns, "--watch", "--status-selector", "ready!=true"}, out, errOut)
	}()
	g.Eventually(out.String, "30s").Should(ContainSubstring("waiting to be reconciled"))

	// Each change of what the table shows is a row; one the selector
	// refuses (Ready=True) is not printed.
	setStatus(ctx, t, app, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", sourcev1.AuthenticationFailedReason, "bad token", o.Generation)}
	})
	g.Eventually(out.String, "30s").Should(ContainSubstring("bad token"))
	setStatus(ctx, t, app, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored", o.Generation)}
	})
	late := gitRepo(ns, "late")
	create(ctx, t, late)
	g.Eventually(out.String, "30s").Should(ContainSubstring("late"))
	g.Expect(env.Client.Delete(ctx, late)).To(Succeed())
	g.Eventually(out.String, "30s").Should(ContainSubstring("(deleted)"))
	cancel()
	g.Expect(<-done).To(Equal(ExitOK), errOut.String())

	got := lines(out.String())
	g.Expect(strings.Fields(got[0])).To(Equal([]string{"NAME", "READY", "REVISION", "AGE", "MESSAGE"}))
	var rows [][]string
	for _, l := range got[1:] {
		rows = append(rows, rowWords(l))
	}
	g.Expect(rows).To(Equal([][]string{
		{"app", "Unknown", "-", "waiting", "to", "be", "reconciled"},
		{"app", "False", "-", "bad", "token"},
		{"late", "Unknown", "-", "waiting", "to", "be", "reconciled"},
		{"late", "Unknown", "-", "(deleted)"},
	}))
	// The rows stay under their headers.
	msgCol := strings.Index(got[0], "MESSAGE")
	for _, l := range got[1:] {
		g.Expect(l[msgCol-3:msgCol]).To(Equal("   "), l)
	}

	r := plumb("get", "all", "--watch")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("--watch follows one kind, not all"))
}
