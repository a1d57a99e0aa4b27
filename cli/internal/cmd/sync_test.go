package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

const waitingRevision = "main@sha1:5555555555555555555555555555555555555555"

// outOfSync sets the status sync-controller writes while a render of a
// manual Kustomization waits.
func outOfSync(k *kustomizev1.Kustomization) {
	k.Status.ObservedGeneration = k.Generation
	k.Status.Sync = &kustomizev1.SyncProgress{Phase: kustomizev1.PhaseSucceeded}
	k.Status.OutOfSync = &kustomizev1.OutOfSyncStatus{Revision: waitingRevision,
		Create: []string{"ConfigMap/x/c"}, Creates: 1, Change: []string{"ConfigMap/x/a"}, Changes: 1}
	k.Status.Conditions = []metav1.Condition{
		cond(meta.ReadyCondition, "True", meta.SucceededReason, "Applied revision: x; revision "+waitingRevision+" waits for a manual sync", k.Generation),
		cond(kustomizev1.OutOfSyncCondition, "True", kustomizev1.ManualSyncPendingReason, "revision "+waitingRevision+" waits", k.Generation),
	}
}

func TestSyncAnnotatesASelectiveSyncAndWaits(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	ks.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	create(ctx, t, ks)
	setStatus(ctx, t, ks, outOfSync)
	standIn(t, ks, outcome{ready: true, message: "Applied revision: " + waitingRevision, revision: waitingRevision}, writeKustomization)

	r := plumb("sync", "kustomization", "app", "-n", ns, "--only", "ConfigMap/x/c")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[0]).To(Equal("◎ revision " + waitingRevision + ": 1 to create (ConfigMap/x/c), 1 to change (ConfigMap/x/a), 0 to prune"))
	g.Expect(out).To(ContainElement("► selective sync of ConfigMap/x/c of Kustomization/" + ns + "/app requested"))
	g.Expect(out).To(ContainElement("✔ Kustomization/" + ns + "/app reconciled, revision " + waitingRevision))
	// The stand-in left status.outOfSync as it was: what still waits.
	g.Expect(out[len(out)-1]).To(HavePrefix("◎ still out of sync: revision " + waitingRevision))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.SyncOnlyAnnotation, "ConfigMap/x/c"))
	g.Expect(got.Annotations[kustomizev1.SyncRequestAnnotation]).NotTo(BeEmpty())

	// A full sync clears the selection.
	r = plumb("sync", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.SyncOnlyAnnotation, ""))
}

func TestSyncRefusesAnAutomaticObjectAndABadSelection(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	auto := kustomization(ns, "auto", "app")
	manual := kustomization(ns, "manual", "app")
	manual.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	create(ctx, t, auto, manual)

	r := plumb("sync", "kustomization", "auto", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("has syncPolicy Automatic and syncs on its own: plumb reconcile kustomization auto"))

	r = plumb("sync", "kustomization", "manual", "-n", ns, "--only", "web")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`--only "web": want Kind/namespace/name`))

	for _, name := range []string{"auto", "manual"} {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.SyncRequestAnnotation), name)
	}
}
