package cmd

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

func cond(t, status, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: metav1.Now()}
}

func gitRepo(ns, name string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL:      "https://git.example.com/org/" + name + ".git",
			Interval: metav1.Duration{Duration: time.Minute},
		},
	}
}

func kustomization(ns, name, source string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source},
			Interval:  metav1.Duration{Duration: time.Minute},
			Prune:     true,
		},
	}
}

// artifact is a status.artifact with the given revision.
func artifact(revision string) *meta.Artifact {
	return &meta.Artifact{Path: "p", URL: "http://example/p", Revision: revision, LastUpdateTime: metav1.Now()}
}

func TestGet(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)

	ready := gitRepo(ns, "app")
	broken := gitRepo(ns, "broken")
	broken.Spec.Suspend = true
	fresh := gitRepo(ns, "fresh")
	ks := kustomization(ns, "app", "app")
	rcv := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		Spec: notificationv1.ReceiverSpec{
			Type:      notificationv1.GitHubReceiver,
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
			SecretRef: &meta.LocalObjectReference{Name: "token"},
		},
	}
	alert := &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec: notificationv1.AlertSpec{
			ProviderRef:  meta.LocalObjectReference{Name: "slack"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: kustomizev1.KustomizationKind, Name: "*"}},
		},
	}
	create(ctx, t, ready, broken, fresh, ks, rcv, alert)

	setStatus(ctx, t, ready, func(o *sourcev1.GitRepository) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.Artifact = artifact("main@sha1:1111111111111111111111111111111111111111")
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "stored artifact for revision main@sha1:1111111", o.Generation)}
	})
	setStatus(ctx, t, broken, func(o *sourcev1.GitRepository) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", sourcev1.AuthenticationFailedReason, "authentication required:\nbad token", o.Generation)}
	})
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.LastAppliedRevision = "main@sha1:2222222222222222222222222222222222222222"
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "applied revision main@sha1:2222222", o.Generation)}
	})
	setStatus(ctx, t, rcv, func(o *notificationv1.Receiver) {
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "receiving webhooks at /hook/abc", o.Generation)}
	})

	for _, tc := range []struct {
		name string
		args []string
		// rows are the expected lines after the header, each as its
		// whitespace-separated fields with AGE removed.
		header string
		rows   [][]string
	}{
		{
			name:   "sources",
			args:   []string{"get", "sources", "-n", ns},
			header: "NAME READY REVISION AGE MESSAGE",
			rows: [][]string{
				{"app", "True", "main@sha1:1111111111111111111111111111111111111111", "stored artifact for revision main@sha1:1111111"},
				{"broken", "False", "-", "(suspended) authentication required: bad token"},
				{"fresh", "Unknown", "-", "waiting to be reconciled"},
			},
		},
		{
			name:   "alias gitrepositories",
			args:   []string{"get", "gitrepositories", "--namespace", ns},
			header: "NAME READY REVISION AGE MESSAGE",
			rows: [][]string{
				{"app", "True", "main@sha1:1111111111111111111111111111111111111111", "stored artifact for revision main@sha1:1111111"},
				{"broken", "False", "-", "(suspended) authentication required: bad token"},
				{"fresh", "Unknown", "-", "waiting to be reconciled"},
			},
		},
		{
			name:   "kustomizations",
			args:   []string{"get", "kustomizations", "-n", ns},
			header: "NAME READY REVISION AGE MESSAGE",
			rows:   [][]string{{"app", "True", "main@sha1:2222222222222222222222222222222222222222", "applied revision main@sha1:2222222"}},
		},
		{
			name:   "receivers",
			args:   []string{"get", "receivers", "-n", ns},
			header: "NAME READY REVISION AGE MESSAGE",
			rows:   [][]string{{"github", "True", "-", "receiving webhooks at /hook/abc"}},
		},
		{
			name:   "alerts",
			args:   []string{"get", "alerts", "-n", ns},
			header: "NAME READY REVISION AGE MESSAGE",
			rows:   [][]string{{"slack", "Unknown", "-", "waiting to be reconciled"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(tc.args...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			got := lines(r.out)
			g.Expect(got).To(HaveLen(len(tc.rows)+1), r.String())
			g.Expect(strings.Join(strings.Fields(got[0]), " ")).To(Equal(tc.header))
			ageCol := strings.Index(got[0], "AGE")
			msgCol := strings.Index(got[0], "MESSAGE")
			for i, want := range tc.rows {
				row := got[i+1]
				// Columns are aligned under their headers.
				g.Expect(len(row)).To(BeNumerically(">", msgCol), row)
				g.Expect(strings.TrimSpace(row[msgCol:])).To(Equal(want[len(want)-1]))
				fields := strings.Fields(row[:ageCol])
				g.Expect(fields).To(Equal(want[:len(want)-1]), row)
				g.Expect(strings.TrimSpace(row[ageCol:msgCol])).To(MatchRegexp(`^\d+[smhd]`))
			}
		})
	}

	t.Run("all namespaces", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "kustomizations", "-A")
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		got := lines(r.out)
		g.Expect(strings.Fields(got[0])).To(Equal([]string{"NAMESPACE", "NAME", "READY", "REVISION", "AGE", "MESSAGE"}))
		var mine []string
		for _, l := range got[1:] {
			if strings.HasPrefix(l, ns+" ") {
				mine = append(mine, l)
			}
		}
		g.Expect(mine).To(HaveLen(1))
		g.Expect(strings.Fields(mine[0])[:4]).To(Equal([]string{ns, "app", "True", "main@sha1:2222222222222222222222222222222222222222"}))
	})

	t.Run("namespace from the kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "sources")
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.errOut).To(ContainSubstring("No GitRepositories found in namespace default."))
		g.Expect(r.out).To(BeEmpty())
	})

	t.Run("unknown kind", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("get", "deployments")
		g.Expect(r.code).To(Equal(ExitError))
		g.Expect(r.errOut).To(ContainSubstring(`unknown kind "deployments"`))
	})

	t.Run("unreachable cluster", func(t *testing.T) {
		g := NewWithT(t)
		var out, errOut strings.Builder
		code := Run(ctx, []string{"--kubeconfig", t.TempDir() + "/missing", "get", "sources"}, &out, &errOut)
		g.Expect(code).To(Equal(ExitError))
		g.Expect(errOut.String()).To(ContainSubstring("kubeconfig"))
	})
	g.Expect(ns).NotTo(BeEmpty())
}
