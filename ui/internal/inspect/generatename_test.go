package inspect

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/testenv"
)

// argoHook is a hook as Argo CD's repositories write it: only a
// generateName, which sync-controller turns into a name per sync.
const argoHook = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: upgrade-sql-schema-
  annotations:
    argocd.argoproj.io/hook: PostSync
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: upgrade
          image: busybox
`

// TestAHookWithOnlyAGenerateNameOpensOnTheLivePage: the Kustomization
// page lists the hook under the name the last sync gave it, and that
// name opens its live page (health, events; no diff, as for any hook).
func TestAHookWithOnlyAGenerateNameOpensOnTheLivePage(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	arts := testenv.NewArtifactServer(t)
	ks := kustomization(ns, "app")
	create(ctx, t, ks)
	data := []byte(manifests + "---\n" + argoHook)
	a := serveRender(arts, "/kustomization/"+ns+"/app", "main@sha1:7777777777777777777777777777777777777777", data)
	started := time.Now().Add(-time.Minute)
	syncAsController(ctx, t, ks, a, data, started)

	// The name sync-controller gave the hook in that sync.
	objs, err := object.DecodeManifests(data)
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		if o.GetNamespace() == "" {
			o.SetNamespace(ns)
		}
	}
	p, err := plan.Build(objs, plan.Options{SyncID: plan.SyncID(a.Digest, ks.Generation, started.Truncate(time.Second))})
	g.Expect(err).NotTo(HaveOccurred())
	var name string
	for _, h := range p.Hooks() {
		if h.Hook.GenerateName == "upgrade-sql-schema-" {
			name = h.GetName()
		}
	}
	g.Expect(name).To(HavePrefix("upgrade-sql-schema-"))
	create(ctx, t, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "upgrade", Image: "busybox"}}}}},
	})

	srv := newServer(t)
	base := "/api/objects/kustomization/" + ns + "/app"
	var page objectPage
	r := do(t, srv, http.MethodGet, base, "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	r.decode(t, &page)
	var hookIDs []string
	for _, h := range page.Hooks {
		hookIDs = append(hookIDs, h.ID)
	}
	id := "batch/Job/" + ns + "/" + name
	g.Expect(hookIDs).To(ContainElement(id), r.body)

	var live livePage
	r = do(t, srv, http.MethodGet, base+"/live?id="+url.QueryEscape(id), "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	r.decode(t, &live)
	g.Expect(live.Hook).To(BeTrue(), r.body)
	g.Expect(live.Object).NotTo(BeNil())
	g.Expect(live.DiffUnavailable).NotTo(BeNil())
	g.Expect(live.DiffUnavailable.Reason).To(ContainSubstring("a hook"))

	// A name of the same generateName that no sync gave is no object of
	// the Kustomization.
	other := "batch/Job/" + ns + "/upgrade-sql-schema-" + strings.Repeat("0", 8)
	r = do(t, srv, http.MethodGet, base+"/live?id="+url.QueryEscape(other), "", "")
	g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
}
