package cmd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/cli/internal/install"
	"plumb.dev/pkg/testenv"
)

// installed applies the default install to e, as `plumb install` does
// without the wait, and a Kustomization with its finalizer and a
// ConfigMap it applied (labelled as sync-controller labels what it
// applies). It returns the ConfigMap.
func installed(ctx context.Context, t *testing.T, e *testenv.Environment) *corev1.ConfigMap {
	t.Helper()
	objs, err := install.Render(install.DefaultOptions("v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, e.Client, objs, io.Discard); err != nil {
		t.Fatal(err)
	}
	ns, err := e.Namespace(ctx, "apps")
	if err != nil {
		t.Fatal(err)
	}
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Finalizers: []string{kustomizev1.SyncFinalizer}},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			Interval:  metav1.Duration{Duration: time.Minute},
			Prune:     true,
		},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workload", Labels: map[string]string{
			"kustomize.plumb.dev/name": "app", "kustomize.plumb.dev/namespace": ns,
		}},
		Data: map[string]string{"k": "v"},
	}
	for _, o := range []client.Object{ks, cm} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}

func TestUninstallRemovesPlumbAndLeavesWhatItAppliedRunning(t *testing.T) {
	e, kc := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := e.Client
	workload := installed(ctx, t, e)
	ksKey := types.NamespacedName{Namespace: workload.Namespace, Name: "app"}
	crdKey := types.NamespacedName{Name: "kustomizations.kustomize.plumb.dev"}
	syncKey := types.NamespacedName{Namespace: install.Namespace, Name: "sync-controller"}

	// A dry run changes nothing.
	r := plumbOn(ctx, kc, "uninstall", "--dry-run")
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{
		"✔ Kustomization/" + workload.Namespace + "/app suspended (dry run)",
		"✔ Deployment/plumb-system/sync-controller deleted (dry run)",
		"✔ Kustomization/" + workload.Namespace + "/app: finalizers removed (dry run)",
		"✔ CustomResourceDefinition/kustomizations.kustomize.plumb.dev deleted (dry run)",
		"✔ Namespace/plumb-system deleted (dry run)",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the dry run does not print %q:\n%s", want, r.out)
		}
	}
	if err := c.Get(ctx, syncKey, &appsv1.Deployment{}); err != nil {
		t.Errorf("the dry run deleted sync-controller: %v", err)
	}
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, ksKey, &ks); err != nil || len(ks.Finalizers) == 0 {
		t.Errorf("the dry run took the finalizer off (%v): %v", err, ks.Finalizers)
	}
	if ks.Spec.Suspend {
		t.Error("the dry run suspended the Kustomization")
	}

	r = plumbOn(ctx, kc, "uninstall")
	if r.code != 0 {
		t.Fatal(r)
	}
	// The order: what applies suspended (a self-managed Plumb's
	// sync-controller would put its Deployments back), controllers,
	// finalizers, CRDs, namespace.
	order := []string{
		"✔ Kustomization/" + workload.Namespace + "/app suspended",
		"✔ Deployment/plumb-system/sync-controller deleted",
		"✔ Kustomization/" + workload.Namespace + "/app: finalizers removed",
		"✔ CustomResourceDefinition/kustomizations.kustomize.plumb.dev deleted",
		"✔ Namespace/plumb-system deleted",
	}
	last := -1
	for _, want := range order {
		i := strings.Index(r.out, want)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order:\n%s", want, r.out)
		}
		last = i
	}

	// What the Kustomization applied is still there, the same object.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(workload), &cm); err != nil {
		t.Fatalf("the workload is gone: %v", err)
	}
	if cm.UID != workload.UID || cm.DeletionTimestamp != nil {
		t.Errorf("the workload was replaced or is being deleted (uid %s → %s)", workload.UID, cm.UID)
	}
	// Plumb is gone: controllers, RBAC, CRDs (and with them the
	// Kustomization); the namespace is being deleted (the test cluster
	// has no namespace controller to finish it).
	mustBeGone(ctx, t, c, &appsv1.Deployment{}, syncKey)
	mustBeGone(ctx, t, c, &rbacv1.ClusterRole{}, types.NamespacedName{Name: "plumb-sync-controller"})
	deadline := time.Now().Add(time.Minute)
	for {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		err := c.Get(ctx, crdKey, crd)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			st, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			t.Logf("uninstall said:\n%s", r.out)
			t.Fatalf("the Kustomization CRD is still there: %v: %v", err, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var ns corev1.Namespace
	err := c.Get(ctx, types.NamespacedName{Name: install.Namespace}, &ns)
	if err == nil && ns.DeletionTimestamp == nil {
		t.Error("the namespace plumb-system is not being deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

func TestUninstallWaitsForTheControllersPodsAndKeepsTheNamespaceWhenAsked(t *testing.T) {
	e, kc := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := e.Client
	workload := installed(ctx, t, e)
	// A pod of sync-controller still running (no kubelet here ends it).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: "sync-controller-0",
			Labels: map[string]string{"app.kubernetes.io/name": "sync-controller"}},
		Spec: corev1.PodSpec{
			// What plumb-system's restricted Pod Security profile asks.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "manager", Image: "sync-controller", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// While it runs, uninstall stops after the Deployments: nothing of
	// the Kustomization is touched.
	r := plumbOn(ctx, kc, "uninstall", "--keep-namespace", "--timeout=3s")
	if r.code == 0 || !strings.Contains(r.out, "◎ waiting for 1 controller pod(s) to stop") {
		t.Fatalf("uninstall did not wait for the pod:\n%s", r)
	}
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, types.NamespacedName{Namespace: workload.Namespace, Name: "app"}, &ks); err != nil || len(ks.Finalizers) == 0 {
		t.Fatalf("the Kustomization lost its finalizer while a controller ran (%v): %v", err, ks.Finalizers)
	}
	// Once the pod is gone, it finishes, and keeps the namespace and the
	// NATS credentials.
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	r = plumbOn(ctx, kc, "uninstall", "--keep-namespace")
	if r.code != 0 {
		t.Fatal(r)
	}
	var ns corev1.Namespace
	if err := c.Get(ctx, types.NamespacedName{Name: install.Namespace}, &ns); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("--keep-namespace: the namespace is gone or going (%v)", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: install.Namespace, Name: install.NATSCredentials}, &corev1.Secret{}); err != nil {
		t.Errorf("--keep-namespace: the NATS credentials are gone: %v", err)
	}
	mustBeGone(ctx, t, c, &corev1.ConfigMap{}, types.NamespacedName{Namespace: install.Namespace, Name: "plumb-config"})
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(workload), &cm); err != nil || cm.UID != workload.UID {
		t.Errorf("the workload is gone or replaced: %v", err)
	}
}
