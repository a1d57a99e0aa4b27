package controller

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// TestReceiverResourceFilter: Flux's resourceFilter example annotates,
// of the GitRepositories a wildcard and a name stand for, only the one
// whose name the call's tag holds; a filter that fails on a call (no tag
// in a body that is not JSON) or a JSON call whose body is not an object
// is answered 400 and annotates nothing; an expression that does not
// give a bool keeps the Receiver from being Ready.
func TestReceiverResourceFilter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	repos := map[string]*sourcev1.GitRepository{}
	for _, name := range []string{"hello-world", "other", "app"} {
		repos[name] = gitRepository(t, ns, name, map[string]string{"registry": "gar"}, true)
	}
	rcv := createReceiver(t, ns, "gar", notificationv1.GenericReceiver, func(s *notificationv1.ReceiverSpec) {
		s.Resources = []notificationv1.CrossNamespaceObjectReference{
			{Kind: sourcev1.GitRepositoryKind, Name: "*", MatchLabels: map[string]string{"registry": "gar"}},
			{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			{Kind: sourcev1.GitRepositoryKind, Name: "missing"},
		}
		s.ResourceFilter = `req.tag.contains(res.metadata.name) && res.kind == 'GitRepository' && res.metadata.labels['registry'] == 'gar'`
	})
	untouched := func() {
		t.Helper()
		for name, repo := range repos {
			g.Expect(requestedAt(t, repo)).To(BeEmpty(), name)
		}
	}

	code, msg := post(t, rcv.Status.WebhookPath, map[string]string{"Content-Type": "text/plain"}, []byte("tag=hello-world"))
	g.Expect(code).To(Equal(http.StatusBadRequest), msg)
	g.Expect(msg).To(ContainSubstring("spec.resourceFilter: no such key: tag"))
	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{"Content-Type": "application/json"}, []byte(`["hello-world"]`))
	g.Expect(code).To(Equal(http.StatusBadRequest), msg)
	g.Expect(msg).To(ContainSubstring("spec.resourceFilter reads the body, which is not a JSON object"))
	untouched()

	body := []byte(`{"action":"INSERT","tag":"us-east1-docker.pkg.dev/my-project/my-repo/hello-world:1.1"}`)
	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{"Content-Type": "application/json; charset=utf-8"}, body)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(Equal("requested a reconcile of GitRepository/hello-world\n"))
	g.Expect(requestedAt(t, repos["hello-world"])).NotTo(BeEmpty())
	g.Expect(requestedAt(t, repos["other"])).To(BeEmpty())
	g.Expect(requestedAt(t, repos["app"])).To(BeEmpty())

	bad := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-filter"},
		Spec: notificationv1.ReceiverSpec{
			Type:           notificationv1.GenericReceiver,
			SecretRef:      &meta.LocalObjectReference{Name: "gar-token"},
			Resources:      []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
			ResourceFilter: `res.metadata.name + '-x'`,
		},
	}
	g.Expect(k8s.Create(ctx, bad)).To(Succeed())
	cond := waitReady(t, bad, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InvalidSpecReason))
	g.Expect(cond.Message).To(ContainSubstring(`spec.resourceFilter: "res.metadata.name + '-x'" gives a string, not a bool`))
}
