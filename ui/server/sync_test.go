package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/ui/server"
)

// The Sync button's request: on a Kustomization with syncPolicy Manual it
// sets plumb.dev/sync (with the selection in plumb.dev/sync-only) and a
// reconcile request, as `plumb sync` does; an automatic one is refused
// with 409 and left unannotated. The object page says which it is.
func TestSyncAnnotatesAManualKustomizationAndRefusesAnAutomaticOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "manual")
	spec := kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour},
		SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}}
	manual := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"}, Spec: spec}
	manual.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	auto := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto"}, Spec: spec}
	create(t, manual, auto)

	srv := start(t, server.AuthKubeconfig, false)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"secret": srv.LoginSecret()})

	status, data, _ := b.do(http.MethodGet, "/api/objects/kustomization/"+ns+"/manual", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var page struct {
		SyncPolicy string `json:"syncPolicy"`
	}
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.SyncPolicy).To(Equal("Manual"))

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/manual/sync", map[string]any{"only": []string{"ConfigMap/" + ns + "/a"}})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(manual), got)).To(Succeed())
	g.Expect(got.Annotations[kustomizev1.SyncRequestAnnotation]).NotTo(BeEmpty())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.SyncOnlyAnnotation, "ConfigMap/"+ns+"/a"))
	g.Expect(got.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/manual/sync", map[string]any{"only": []string{"web"}})
	g.Expect(status).To(Equal(http.StatusBadRequest), string(data))

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+ns+"/auto/sync", map[string]any{})
	g.Expect(status).To(Equal(http.StatusConflict), string(data))
	g.Expect(string(data)).To(ContainSubstring("syncs on its own"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(auto), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.SyncRequestAnnotation))
}
