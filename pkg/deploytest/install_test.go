package deploytest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// strict makes the API server refuse unknown or duplicated fields, so a
// misspelt field in deploy/ is an error rather than silently dropped.
var strict = client.FieldValidation("Strict")

// installRank orders objects as an installer must: CRDs and the namespace
// before anything that lives in or refers to them.
func installRank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "ServiceAccount", "ConfigMap", "ClusterRole", "Role":
		return 2
	case "ClusterRoleBinding", "RoleBinding":
		return 3
	default:
		return 4
	}
}

var (
	installOnce sync.Once
	installErr  error
)

// install creates the rendered base on the test API server once: each object
// first as a server-side dry-run (which runs validation, defaulting and
// admission without storing), then for real so later objects and the RBAC
// checks find it. The CRDs are already there (pkg/testenv installs them from
// the same files), so they get a dry-run server-side apply instead, which
// validates them just the same.
func install(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		if installErr = doInstall(buildBase(t)); installErr == nil {
			installErr = waitForBindings(t)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
}

// waitForBindings waits until the API server's authorizer, which learns of
// new RoleBindings from a watch, grants each controller its first call.
func waitForBindings(t *testing.T) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, sa := range controllers {
		first := needed[sa][0]
		for !allowed(context.Background(), t, sa, first) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the RBAC of %s never granted %s", sa, first)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func doInstall(objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sort.SliceStable(objs, func(i, j int) bool { return installRank(objs[i]) < installRank(objs[j]) })
	for _, o := range objs {
		id := fmt.Sprintf("%s %s", o.GetKind(), client.ObjectKeyFromObject(o))
		if o.GetKind() == "CustomResourceDefinition" {
			ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
			if err := env.Client.Apply(ctx, ac, client.DryRunAll, client.FieldOwner("deploytest"), client.ForceOwnership); err != nil {
				return fmt.Errorf("dry-run apply of %s: %w", id, err)
			}
			continue
		}
		if err := env.Client.Create(ctx, o.DeepCopy(), client.DryRunAll, strict); err != nil {
			return fmt.Errorf("dry-run create of %s: %w", id, err)
		}
		if err := env.Client.Create(ctx, o.DeepCopy(), strict); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create of %s: %w", id, err)
		}
	}
	return nil
}

// TestInstall: every object of deploy/ is accepted by a real API server,
// and reads back as it was rendered where it matters (the API server did
// not drop a field the install relies on).
func TestInstall(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ctx := context.Background()
	objs := buildBase(t)
	g.Expect(objs).NotTo(BeEmpty())
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), live)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
	// Spot checks of fields a typo would lose under a lax decoder.
	for _, name := range controllers {
		live := &unstructured.Unstructured{}
		live.SetAPIVersion("apps/v1")
		live.SetKind("Deployment")
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live)).To(Succeed())
		ro, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "template", "spec", "containers")
		c := ro.([]any)[0].(map[string]any)
		g.Expect(c).To(HaveKeyWithValue("securityContext", HaveKeyWithValue("readOnlyRootFilesystem", true)), name)
		g.Expect(c).To(HaveKey("livenessProbe"), name)
		g.Expect(c).To(HaveKey("readinessProbe"), name)
	}
}

// TestSyncRestrictedComponentRenders: the narrower sync-controller RBAC
// renders on top of the base, drops the cluster-admin binding and passes
// a server-side dry-run.
func TestSyncRestrictedComponentRenders(t *testing.T) {
	g := NewWithT(t)
	objs := restrictedOverlay(t)
	g.Expect(find(objs, "ClusterRoleBinding", "plumb-sync-controller-cluster-admin")).To(BeNil())
	g.Expect(find(objs, "ClusterRole", "plumb-sync-controller-apply")).NotTo(BeNil())
	g.Expect(find(objs, "ClusterRoleBinding", "plumb-sync-controller-apply")).NotTo(BeNil())
	for _, name := range []string{"plumb-sync-controller-apply"} {
		for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
			g.Expect(env.Client.Create(context.Background(), find(objs, kind, name).DeepCopy(), client.DryRunAll, strict)).To(Succeed(), kind)
		}
	}
}
