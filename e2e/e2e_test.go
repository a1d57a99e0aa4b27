package e2e

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/localenv"
)

// A commit pushed with the git binary reaches the cluster through the
// webhook alone (the GitRepository's interval is ten minutes): the Git
// server's signed push event → Receiver → new artifact → rendered →
// applied → Ready.
func TestPushWebhookToReady(t *testing.T) {
	s := deploy(t, "e2e-push")
	s.waitDeploymentAvailable()

	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello after a push")
	sha := s.push("Change the greeting")

	s.g.Eventually(func(g Gomega) {
		deliveries := env.Git.Deliveries(s.demo.Repo)
		g.Expect(deliveries).NotTo(BeEmpty())
		last := deliveries[len(deliveries)-1]
		g.Expect(last.After).To(Equal(sha))
		g.Expect(last.Err).NotTo(HaveOccurred())
		g.Expect(last.Status).To(Equal(http.StatusOK))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the push webhook was not accepted")
	s.waitSourceRevision(sha)
	s.waitRendered(sha)
	s.waitApplied(sha)

	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}, cm)).To(Succeed())
	s.g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "Hello after a push"))
}

// A foreign edit of a managed object is reverted, and an alert naming the
// drifted path reaches the Slack stand-in.
func TestForeignEditRevertedAndAlerted(t *testing.T) {
	s := deploy(t, "e2e-drift")
	key := types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}

	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, key, cm)).To(Succeed())
	cm.Data["greeting"] = "edited by hand"
	s.g.Expect(env.Client.Update(s.ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	s.g.Eventually(func(g Gomega) {
		live := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(s.ctx, key, live)).To(Succeed())
		g.Expect(live.Data).To(HaveKeyWithValue("greeting", "Hello from Plumb"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the foreign edit was not reverted")

	msg := s.waitSlack(kustomizev1.DriftCorrectedReason, "ConfigMap/"+key.Namespace+"/hello-config data.greeting")
	t.Logf("alert: %s", msg)
}

// A commit that deletes an object prunes it from the cluster and from the
// inventory.
func TestDeletedObjectPruned(t *testing.T) {
	s := deploy(t, "e2e-prune")
	svcKey := types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello"}
	s.g.Expect(env.Client.Get(s.ctx, svcKey, &corev1.Service{})).To(Succeed())

	s.edit("kustomization.yaml", "  - service.yaml\n", "")
	s.g.Expect(s.clone.Remove("service.yaml")).To(Succeed())
	sha := s.push("Remove the Service")

	k := s.waitApplied(sha)
	s.g.Expect(inventoryIDs(k.Status.Inventory)).NotTo(ContainElement("Service/" + svcKey.Namespace + "/hello"))
	s.g.Expect(inventoryIDs(k.Status.Inventory)).To(ContainElement("Deployment/" + svcKey.Namespace + "/hello"))
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, svcKey, &corev1.Service{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the Service was not pruned")
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello"}, &appsv1.Deployment{})).To(Succeed())
}

// A commit that does not build leaves Ready=False with the build error,
// deletes nothing, and the previous revision keeps running.
func TestBrokenCommitKeepsPreviousRevision(t *testing.T) {
	s := deploy(t, "e2e-broken")
	s.waitDeploymentAvailable()
	good := s.kustomization()
	goodRevision := good.Status.LastAppliedRevision
	goodInventory := inventoryIDs(good.Status.Inventory)

	s.edit("kustomization.yaml", "  - service.yaml\n", "  - service.yaml\n  - does-not-exist.yaml\n")
	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: never applied")
	sha := s.push("Break the build")
	s.waitSourceRevision(sha)

	k := s.waitNotReady(func(g Gomega, k *kustomizev1.Kustomization) {
		g.Expect(readyCondition(k).Message).To(ContainSubstring("does-not-exist.yaml"))
	})

	s.g.Expect(k.Status.LastAppliedRevision).To(Equal(goodRevision))
	s.g.Expect(inventoryIDs(k.Status.Inventory)).To(ConsistOf(goodInventory))
	for _, e := range k.Status.Inventory.Entries {
		obj := inventoryObject(e)
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "%s/%s/%s was deleted", e.Kind, e.Namespace, e.Name)
	}
	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}, cm)).To(Succeed())
	s.g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "Hello from Plumb"))
	s.waitDeploymentAvailable()
}

// sync-controller killed with SIGKILL in the middle of a sync (while the
// PreSync hook runs) and started again finishes the sync: the hook it had
// started is waited on, not run twice, and the inventory holds every object
// of the new revision.
func TestSyncControllerKilledMidSync(t *testing.T) {
	s := deploy(t, "e2e-crash")
	ns := s.demo.AppNamespace
	sync := env.Controllers[localenv.SyncController]
	t.Cleanup(func() {
		if !sync.Running() {
			_ = sync.Restart(s.ctx)
		}
	})

	// The hook now runs for six seconds, long enough to be killed in; the
	// commit also adds an object and changes another.
	s.edit("migrate-job.yaml", `local.plumb.dev/run-seconds: "2"`, `local.plumb.dev/run-seconds: "6"`)
	s.edit("kustomization.yaml", "  - service.yaml\n", "  - service.yaml\n  - extra.yaml\n")
	s.g.Expect(s.clone.Write(map[string]string{"extra.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hello-extra
  namespace: ` + ns + `
data:
  added: "yes"
`})).To(Succeed())
	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello after a crash")
	sha := s.push("Longer migration, one more ConfigMap")

	// Wait until the new sync is in its PreSync phase with the hook created.
	job := s.inPreSyncWithHook(sha, demoHook, "6")
	hookUID := job.UID

	s.g.Expect(sync.Kill()).To(Succeed())
	s.g.Expect(sync.Running()).To(BeFalse())
	k := s.kustomization()
	s.g.Expect(k.Status.LastAppliedRevision).NotTo(Equal(revision(sha)), "the sync finished before the kill")
	t.Logf("killed sync-controller during %s wave %d", k.Status.Sync.Phase, k.Status.Sync.Wave)

	s.g.Expect(sync.Restart(s.ctx)).To(Succeed())
	k = s.waitApplied(sha)

	s.g.Expect(inventoryIDs(k.Status.Inventory)).To(ConsistOf(
		"Namespace//"+ns,
		"ConfigMap/"+ns+"/hello-config",
		"ConfigMap/"+ns+"/hello-extra",
		"Deployment/"+ns+"/hello",
		"Service/"+ns+"/hello",
	))
	for _, e := range k.Status.Inventory.Entries {
		obj := inventoryObject(e)
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	}
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	s.g.Expect(job.UID).To(Equal(hookUID), "the restarted controller ran the hook again")
	s.g.Expect(job.Status.Succeeded).To(BeEquivalentTo(1))
	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: ns, Name: "hello-config"}, cm)).To(Succeed())
	s.g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "Hello after a crash"))
}
