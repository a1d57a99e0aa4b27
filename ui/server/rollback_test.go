package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/ui/server"
)

// The Rollback button's POST sets plumb.dev/rollback as the user, to an
// earlier entry of status.history only; Resume removes it. A user who may
// not patch the object gets the API server's 403.
func TestRollbackAnnotatesAnEarlierRenderAsTheUserAndResumeEndsIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mine, theirs := namespace(t, "rbmine"), namespace(t, "rbtheirs")
	token, _ := serviceAccountToken(t, mine, "dev")
	grant(t, mine, mine, "dev", "get", "list", "watch", "patch")
	create(t, kustomization(mine, "app", "app"), kustomization(theirs, "app", "app"))
	applied, earlier := "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("a", 64)
	for _, ns := range []string{mine, theirs} {
		ks := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
		now := metav1.Now()
		ks.Status.RenderedArtifact = &meta.Artifact{Path: "p", URL: "http://example/p", Revision: "main@sha1:b", Digest: applied, LastUpdateTime: now}
		for _, d := range []string{applied, earlier} {
			ks.Status.History = append(ks.Status.History, meta.Snapshot{Digest: d, FirstReconciled: now, LastReconciled: now,
				LastReconciledStatus: meta.SucceededReason, TotalReconciliations: 1})
		}
		g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())
	}
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": token})
	key := client.ObjectKey{Namespace: mine, Name: "app"}
	annotations := func() map[string]string {
		ks := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
		return ks.Annotations
	}

	status, data, _ := b.do(http.MethodPost, "/api/objects/kustomization/"+theirs+"/app/rollback", map[string]any{"digest": earlier})
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))

	// The render applied now, or one the history does not have, holds nothing.
	for _, d := range []string{applied, "sha256:" + strings.Repeat("c", 64), ""} {
		status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/rollback", map[string]any{"digest": d})
		g.Expect(status).To(Equal(http.StatusBadRequest), string(data))
		g.Expect(errorOf(t, data)).To(ContainSubstring("is not an earlier render of status.history"))
	}
	g.Expect(annotations()).NotTo(HaveKey(kustomizev1.RollbackAnnotation))

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/rollback", map[string]any{"digest": earlier, "followGit": true})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	got := annotations()
	g.Expect(got).To(HaveKeyWithValue(kustomizev1.RollbackAnnotation, earlier))
	g.Expect(got).To(HaveKeyWithValue(kustomizev1.RollbackFollowGitAnnotation, applied))
	g.Expect(got).To(HaveKey(meta.ReconcileRequestAnnotation))

	status, data, _ = b.do(http.MethodPost, "/api/objects/kustomization/"+mine+"/app/resume", map[string]any{})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	got = annotations()
	g.Expect(got).NotTo(HaveKey(kustomizev1.RollbackAnnotation))
	g.Expect(got).NotTo(HaveKey(kustomizev1.RollbackFollowGitAnnotation))
}
