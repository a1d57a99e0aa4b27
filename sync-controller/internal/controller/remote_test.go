package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/testenv"
)

// kubeConfigSecret stores kc in a Secret of ns under key, as a tenant
// would for spec.kubeConfig.
func kubeConfigSecret(t *testing.T, ctx context.Context, ns, name, key string, kc *clientcmdapi.Config) {
	t.Helper()
	data, err := clientcmd.Write(*kc)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string][]byte{key: data},
	})).To(Succeed())
}

// withKubeConfig points a Kustomization at the kubeconfig in Secret name.
func withKubeConfig(name string) func(*kustomizev1.Kustomization) {
	return func(ks *kustomizev1.Kustomization) {
		ks.Spec.KubeConfig = &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: name}}
	}
}

// notFoundIn fails on any error other than NotFound, and reports whether
// the object is absent.
func notFoundIn(g Gomega, c client.Client, key client.ObjectKey) bool {
	err := c.Get(context.Background(), key, &corev1.ConfigMap{})
	if err == nil {
		return false
	}
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading %s: %v", key, err)
	return true
}

// TestKustomizationAppliesIntoTheRemoteClusterOfItsKubeConfig runs a
// second control plane as the remote cluster: the Kustomization lives in
// the suite's cluster, its objects in the remote one.
func TestKustomizationAppliesIntoTheRemoteClusterOfItsKubeConfig(t *testing.T) {
	g := NewWithT(t)
	remote, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })

	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		withKubeConfig("remote")(ks)
		ks.Spec.Wait = true // health is read in the remote cluster too
	})
	ns := ks.Namespace
	g.Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	render(t, ks, "main@sha1:1", configMapIn(ns, "kept")+"---\n"+configMapIn(ns, "gone"))

	// No Secret yet: refused with the reason, nothing applied anywhere.
	msg := waitNotReady(t, ks, kustomizev1.KubeConfigInvalidReason)
	g.Expect(msg).To(ContainSubstring(`Secret ` + ns + `/remote`))
	g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())
	g.Expect(notFoundIn(g, env.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())

	kubeConfigSecret(t, ctx, ns, "remote", "value", remote.Kubeconfig())
	requestReconcile(t, ks)
	got := waitReady(t, ks, "main@sha1:1")

	// The objects are in the remote cluster and not here; the inventory is here.
	for _, name := range []string{"kept", "gone"} {
		var cm corev1.ConfigMap
		g.Expect(remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
		g.Expect(cm.Data).To(Equal(map[string]string{"key": name}))
		g.Expect(notFoundIn(g, env.Client, client.ObjectKey{Namespace: ns, Name: name})).To(BeTrue(), "%s applied locally", name)
	}
	healthy := conditions.Get(got, kustomizev1.HealthyCondition)
	g.Expect(healthy).NotTo(BeNil())
	g.Expect(healthy.Status).To(Equal(metav1.ConditionTrue), healthy.Message)
	g.Expect(healthy.Message).To(Equal("all 2 objects are healthy"))
	g.Expect(got.Status.Inventory).NotTo(BeNil())
	var names []string
	for _, e := range got.Status.Inventory.Entries {
		g.Expect(e.Kind).To(Equal("ConfigMap"))
		g.Expect(e.Namespace).To(Equal(ns))
		names = append(names, e.Name)
	}
	g.Expect(names).To(ConsistOf("gone", "kept"))
	g.Expect(running.Clients.RemoteClusters()).To(Equal(1))

	// A foreign edit in the remote cluster is seen by the remote watcher
	// and reverted.
	var cm corev1.ConfigMap
	g.Expect(remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &cm)).To(Succeed())
	cm.Data["key"] = "edited"
	g.Expect(remote.Client.Update(ctx, &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		var now corev1.ConfigMap
		g.Expect(remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &now)).To(Succeed())
		g.Expect(now.Data["key"]).To(Equal("kept"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// What left Git is pruned in the remote cluster.
	render(t, ks, "main@sha1:2", configMapIn(ns, "kept"))
	waitReady(t, ks, "main@sha1:2")
	g.Eventually(func(g Gomega) {
		g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "gone"})).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// A second Kustomization targeting the same cluster shares it.
	other := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Spec: ks.Spec}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	render(t, other, "main@sha1:3", configMapIn(ns, "other"))
	waitReady(t, other, "main@sha1:3")
	g.Expect(running.Clients.RemoteClusters()).To(Equal(1))

	// Rotated credentials replace the connection at the next reconcile:
	// a token the remote cluster does not know is refused there, though
	// the connection of the old kubeconfig still works for the other.
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "remote"}, &secret)).To(Succeed())
	good := secret.Data["value"]
	revoked := remote.Kubeconfig()
	revoked.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "revoked"}
	secret.Data["value"], err = clientcmd.Write(*revoked)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Update(ctx, &secret)).To(Succeed())
	requestReconcile(t, ks)
	g.Expect(waitNotReady(t, ks, kustomizev1.RemoteClusterUnreachableReason)).To(ContainSubstring("the server has asked for the client to provide credentials"))
	g.Expect(running.Clients.RemoteClusters()).To(Equal(1))
	secret.Data["value"] = good
	g.Expect(env.Client.Update(ctx, &secret)).To(Succeed())
	requestReconcile(t, ks)
	waitReady(t, ks, "main@sha1:2")
	g.Expect(running.Clients.RemoteClusters()).To(Equal(1))

	// Deleting a Kustomization prunes its objects in the remote cluster;
	// the cluster stays while the other one targets it, and goes with it.
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "kept"})).To(BeTrue())
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Kustomization still there: %v", err)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(running.Clients.RemoteClusters()).To(Equal(1))
	g.Expect(remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, &corev1.ConfigMap{})).To(Succeed())

	g.Expect(env.Client.Delete(ctx, other)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "other"})).To(BeTrue())
		g.Expect(running.Clients.RemoteClusters()).To(Equal(0))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// TestBadKubeConfigIsReadyFalseWithItsReason: a kubeconfig that may not be
// used, or a cluster that cannot be reached, is a reason of its own and
// applies nothing; the exec plugin is refused before any connection.
func TestBadKubeConfigIsReadyFalseWithItsReason(t *testing.T) {
	exec := func(kc *clientcmdapi.Config) {
		kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch /tmp/pwned"},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
	}
	tests := []struct {
		name, key string
		mutate    func(*clientcmdapi.Config)
		reason    string
		message   string
	}{
		{name: "exec plugin", key: "value.yaml", mutate: exec,
			reason: kustomizev1.KubeConfigInvalidReason, message: `user "admin": an exec plugin is not allowed`},
		{name: "no value key", key: "config", mutate: func(*clientcmdapi.Config) {},
			reason: kustomizev1.KubeConfigInvalidReason, message: `has no key ["value" "value.yaml"]`},
		{name: "nothing listens", key: "value", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["envtest"].Server = "https://127.0.0.1:1"
		}, reason: kustomizev1.RemoteClusterUnreachableReason, message: "(https://127.0.0.1:1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, ks := newKustomization(t, withKubeConfig("remote"))
			kc := env.Kubeconfig()
			tt.mutate(kc)
			kubeConfigSecret(t, ctx, ks.Namespace, "remote", tt.key, kc)
			render(t, ks, "main@sha1:1", configMapIn(ks.Namespace, "cm"))
			g.Expect(waitNotReady(t, ks, tt.reason)).To(ContainSubstring(tt.message))
			// The kubeconfig names the suite's own cluster: nothing was
			// applied to it either.
			g.Expect(notFoundIn(g, env.Client, client.ObjectKey{Namespace: ks.Namespace, Name: "cm"})).To(BeTrue())
		})
	}
}

// TestRemoteServiceAccountIsImpersonatedInTheRemoteCluster: with
// serviceAccountName the remote API server decides as that ServiceAccount
// of the remote cluster, which here may do nothing.
func TestRemoteServiceAccountIsImpersonatedInTheRemoteCluster(t *testing.T) {
	g := NewWithT(t)
	remote, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		withKubeConfig("remote")(ks)
		ks.Spec.ServiceAccountName = "deployer"
	})
	ns := ks.Namespace
	g.Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeConfigSecret(t, ctx, ns, "remote", "value", remote.Kubeconfig())
	render(t, ks, "main@sha1:1", configMapIn(ns, "cm"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("forbidden: ServiceAccount " + ns + "/deployer may not patch configmaps"))
	g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "cm"})).To(BeTrue())
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
}

// TestForceDeleteReleasesAKustomizationWhoseClusterIsGone: a remote
// Kustomization whose kubeconfig Secret went away cannot prune, and its
// deletion waits; plumb.dev/force-delete: enabled lets it go, leaving the
// remote objects, with an event saying so.
func TestForceDeleteReleasesAKustomizationWhoseClusterIsGone(t *testing.T) {
	g := NewWithT(t)
	remote, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })
	ctx, ks := newKustomization(t, withKubeConfig("remote"))
	ns := ks.Namespace
	g.Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeConfigSecret(t, ctx, ns, "remote", "value", remote.Kubeconfig())
	render(t, ks, "main@sha1:1", configMapIn(ns, "left"))
	waitReady(t, ks, "main@sha1:1")
	subscription := subscribeEvents(t, ks)

	g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"}})).To(Succeed())
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 3*time.Second, 200*time.Millisecond).
		Should(BeTrue(), "the deletion waits while nothing can be pruned")

	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{kustomizev1.ForceDeleteAnnotation: kustomizev1.EnabledValue}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 30*time.Second, 200*time.Millisecond).
		Should(BeFalse(), "force-delete releases it")
	g.Expect(notFoundIn(g, remote.Client, client.ObjectKey{Namespace: ns, Name: "left"})).To(BeFalse(), "the remote object is left")
	g.Eventually(func(g Gomega) {
		var msgs []string
		for _, e := range subscription.withReason(kustomizev1.PruneFailedReason) {
			msgs = append(msgs, e.Message)
		}
		g.Expect(msgs).To(ContainElement(ContainSubstring("left in place")))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
