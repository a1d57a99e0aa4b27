package cmd

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/testenv"
)

const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
  tuned: from-git
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
data:
  b: "2"
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: from-git
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    plumb.dev/hook: PreSync
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox
`

// syncAsController applies the rendered objects the way sync-controller
// does (stamped, server-side apply as plumb-sync) and records them in the
// Kustomization's status with the artifact, so the cluster starts in sync.
func syncAsController(ctx context.Context, t *testing.T, ks *kustomizev1.Kustomization, a *meta.Artifact, data []byte, extra ...*unstructured.Unstructured) {
	t.Helper()
	applied := applyAsController(ctx, t, appliedKustomization(ks), data)
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.RenderedArtifact = a
		o.Status.Inventory = inventory.New(append(applied, extra...))
	})
}

// applyAsController applies the objects of data that are no hook the way
// sync-controller applies them for view's object (stamped, server-side
// apply as plumb-sync), and returns them.
func applyAsController(ctx context.Context, t *testing.T, view *applied, data []byte) []*unstructured.Unstructured {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return testenv.ApplyAsSyncController(ctx, t, c, view.Applied, data)
}

// foreignPatch merge-patches obj as another field manager would (kubectl
// edit), making drift.
func foreignPatch(ctx context.Context, t *testing.T, obj client.Object, patch string) {
	t.Helper()
	if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
}

func TestDiff(t *testing.T) {
	ctx, ns := newNamespace(t)
	srv := testenv.NewArtifactServer(t)
	ks := kustomization(ns, "app", "repo")
	ks.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/data/tuned"}}}
	create(ctx, t, ks)
	data := []byte(manifests)
	a := srv.ServeRendered("kustomization", ns, "app", "main@sha1:6666666666666666666666666666666666666666", data)

	// An object a previous revision applied and this one dropped.
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old",
		Labels: map[string]string{kustomizev1.NameLabel: "app", kustomizev1.NamespaceLabel: ns}}}
	create(ctx, t, old)
	oldStub := inventory.Object(kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "old"})
	syncAsController(ctx, t, ks, a, data)

	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

	t.Run("in sync", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("diff", "kustomization", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{
			"Comparing Kustomization/" + ns + "/app with revision main@sha1:6666666666666666666666666666666666666666 (live → Git)",
			"(1 hook objects not compared: they run during a sync)",
			"✔ no drift: 3 objects match Git",
		}))
	})

	t.Run("ignored fields and fields of other managers are not drift", func(t *testing.T) {
		g := NewWithT(t)
		foreignPatch(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}},
			`{"data":{"tuned":"by-hand"},"metadata":{"labels":{"team":"a"}}}`)
		r := plumb("diff", "ks", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring("✔ no drift"))
	})

	t.Run("drift, a missing object and one to prune", func(t *testing.T) {
		g := NewWithT(t)
		foreignPatch(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, `{"data":{"mode":"slow"}}`)
		foreignPatch(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}, `{"stringData":{"password":"leaked-value"}}`)
		g.Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"}})).To(Succeed())
		setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
			o.Status.Inventory.Entries = append(o.Status.Inventory.Entries, inventory.EntryOf(oldStub))
		})

		r := plumb("diff", "ks", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{
			"Comparing Kustomization/" + ns + "/app with revision main@sha1:6666666666666666666666666666666666666666 (live → Git)",
			"~ ConfigMap/" + ns + "/settings",
			`    data.mode: "slow" → "fast"`,
			"+ ConfigMap/" + ns + "/extra (not in the cluster; a sync creates it)",
			"~ Secret/" + ns + "/creds",
			`    data.password: "<redacted>" → "<redacted>"`,
			"- ConfigMap/" + ns + "/old (no longer in Git; a sync prunes it)",
			"(1 hook objects not compared: they run during a sync)",
			"2 changed, 1 to create, 1 to prune, 0 unchanged",
		}))
		g.Expect(r.out).NotTo(ContainSubstring("leaked-value"))
		g.Expect(r.out).NotTo(ContainSubstring("from-git"))

		// The diff wrote nothing: the drift is still there.
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, key("settings"), &cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("mode", "slow"))
	})

	t.Run("a fight sync-controller reports is drift", func(t *testing.T) {
		g := NewWithT(t)
		syncAsController(ctx, t, ks, a, data)
		setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
			o.Status.Drift = &kustomizev1.DriftStatus{Contested: []kustomizev1.ContestedDrift{{
				Object: "ConfigMap/" + ns + "/settings", Fields: []string{"data.mode"}, Manager: "mode-setter", Reverts: 4,
			}}}
		})
		defer setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) { o.Status.Drift = nil })
		r := plumb("diff", "ks", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.out).To(ContainSubstring("⚔ ConfigMap/" + ns + "/settings: data.mode contested by field manager mode-setter, 4 revert(s), corrections backing off (see the DriftContested condition)"))
		g.Expect(r.out).To(ContainSubstring(", 1 contested"))
	})

	t.Run("prune off keeps removed objects out of the drift count", func(t *testing.T) {
		g := NewWithT(t)
		foreignPatch(ctx, t, ks, `{"spec":{"prune":false}}`)
		syncAsController(ctx, t, ks, a, data, oldStub)
		r := plumb("diff", "ks", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring("  ConfigMap/" + ns + "/old (no longer in Git; spec.prune is off, so it stays)"))
		g.Expect(r.out).To(ContainSubstring("✔ no drift: 3 objects match Git"))
	})

	t.Run("errors", func(t *testing.T) {
		tampered := *a
		tampered.Digest = "sha256:" + strings.Repeat("0", 64)
		gone := *a
		gone.URL = srv.URL + "/kustomization/" + ns + "/app/" + strings.Repeat("0", 64) + ".yaml"
		// Steered at another API path through the service proxy.
		hostile := *a
		hostile.URL = "http://render-controller.plumb-system.svc/../../../../api/v1/nodes"
		elsewhere := *a
		elsewhere.URL = "http://source-controller.plumb-system.svc" + strings.TrimPrefix(a.URL, srv.URL)
		for _, tc := range []struct {
			name     string
			artifact *meta.Artifact
			want     string
		}{
			{"tampered artifact", &tampered, "refusing a tampered or partial artifact"},
			{"artifact gone", &gone, "404"},
			{"a url that is no render", &hostile, "the artifact URL is not one of render-controller's rendered artifacts: http://render-controller.plumb-system.svc/../../../../api/v1/nodes"},
			{"a url of another service", &elsewhere, "the artifact URL is not one of render-controller's rendered artifacts"},
			{"not rendered yet", nil, "has no rendered artifact yet"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := NewWithT(t)
				name := strings.ReplaceAll(tc.name, " ", "-")
				k := kustomization(ns, name, "repo")
				create(ctx, t, k)
				if tc.artifact != nil {
					setStatus(ctx, t, k, func(o *kustomizev1.Kustomization) { o.Status.RenderedArtifact = tc.artifact })
				}
				r := plumb("diff", "ks", name, "-n", ns)
				g.Expect(r.code).To(Equal(ExitError), r.String())
				g.Expect(r.errOut).To(ContainSubstring(tc.want))
			})
		}
	})
}

func TestDiffRedactsValuesSubstitutedFromSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := testenv.NewArtifactServer(t)
	const token = "tok-8c1f6a2b9d"
	create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, StringData: map[string]string{"api_token": token}})
	ks := kustomization(ns, "app", "repo")
	ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "vars"}}}
	create(ctx, t, ks)
	// What render-controller made of ${api_token}.
	data := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: client\ndata:\n  url: https://api.example/?token=" + token + "\n  mode: fast\n")
	a := srv.ServeRendered("kustomization", ns, "app", "main@sha1:7777777777777777777777777777777777777777", data)
	syncAsController(ctx, t, ks, a, data)
	foreignPatch(ctx, t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client"}},
		`{"data":{"url":"https://api.example/?token=guess","mode":"slow"}}`)

	r := plumb("diff", "ks", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(lines(r.out)).To(Equal([]string{
		"Comparing Kustomization/" + ns + "/app with revision main@sha1:7777777777777777777777777777777777777777 (live → Git)",
		"~ ConfigMap/" + ns + "/client",
		`    data.mode: "slow" → "fast"`,
		`    data.url: "<redacted>" → "<redacted>"`,
		"1 changed, 0 to create, 0 to prune, 0 unchanged",
	}))
	g.Expect(r.out + r.errOut).NotTo(ContainSubstring(token))
}

// TestDiffNewCRD: a custom resource whose CRD comes in the same set is
// reported as to be created (a sync creates the CRD first), and a hook with
// only a generateName is skipped like any hook.
func TestDiffNewCRD(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	srv := testenv.NewArtifactServer(t)
	data := []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + ns + `.example.com
spec:
  group: ` + ns + `.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: ` + ns + `.example.com/v1
kind: Widget
metadata:
  name: blue
spec:
  size: 3
---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: smoke-test-
  annotations:
    plumb.dev/hook: PostSync
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: t, image: busybox}]
`)
	ks := kustomization(ns, "crd", "repo")
	create(ctx, t, ks)
	a := srv.ServeRendered("kustomization", ns, "crd", "main@sha1:cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd", data)
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) { o.Status.RenderedArtifact = a })

	r := plumb("diff", "ks", "crd", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(lines(r.out)[1:]).To(Equal([]string{
		"+ CustomResourceDefinition/widgets." + ns + ".example.com (not in the cluster; a sync creates it)",
		"+ Widget/" + ns + "/blue (its CRD is not installed yet; a sync creates both)",
		"(1 hook objects not compared: they run during a sync)",
		"0 changed, 2 to create, 0 to prune, 0 unchanged",
	}))
}
