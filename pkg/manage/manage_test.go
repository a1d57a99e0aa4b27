package manage

import (
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/object"
)

func TestStamp(t *testing.T) {
	g := NewWithT(t)
	owner := Owner{Namespace: "apps", Name: "web"}
	a := object.Stub("v1", "ConfigMap", "apps", "settings")
	hash, err := Stamp(a, owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.GetLabels()).To(Equal(map[string]string{kustomizev1.NameLabel: "web", kustomizev1.NamespaceLabel: "apps"}))
	g.Expect(a.GetAnnotations()).To(HaveKeyWithValue(AppliedHashAnnotation, hash))
	got, ok := OwnerOf(a.GetLabels())
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(Owner{Kind: kustomizev1.KustomizationKind, Namespace: "apps", Name: "web"}))
	g.Expect(owner.Owns(a.GetLabels())).To(BeTrue())

	again, err := Stamp(a, owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(hash), "stamping is idempotent")

	b := object.Stub("v1", "ConfigMap", "apps", "settings")
	b.Object["data"] = map[string]any{"k": "v"}
	other, err := Stamp(b, owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).NotTo(Equal(hash), "content changes the hash")

	_, ok = OwnerOf(map[string]string{"app": "x"})
	g.Expect(ok).To(BeFalse())
}

func TestHelmReleaseOwner(t *testing.T) {
	g := NewWithT(t)
	ks := Owner{Namespace: "apps", Name: "web"}
	hr := Owner{Kind: helmv2.HelmReleaseKind, Namespace: "apps", Name: "web"}
	a := object.Stub("v1", "ConfigMap", "apps", "settings")
	_, err := Stamp(a, hr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.GetLabels()).To(Equal(map[string]string{helmv2.NameLabel: "web", helmv2.NamespaceLabel: "apps"}))
	g.Expect(hr.Owns(a.GetLabels())).To(BeTrue())
	g.Expect(ks.Owns(a.GetLabels())).To(BeFalse(), "a Kustomization of the same name does not own it")
	got, ok := OwnerOf(a.GetLabels())
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(hr))
	_, ok = OwnerOfKind(kustomizev1.KustomizationKind, a.GetLabels())
	g.Expect(ok).To(BeFalse())
}

// A chart that renders a Kustomization's owner labels (or Git that holds a
// HelmRelease's) does not give the object a second owner: Stamp keeps only
// the owner's, and every other label.
func TestStampStripsTheOtherKindsOwnerLabels(t *testing.T) {
	g := NewWithT(t)
	foreign := map[string]string{
		kustomizev1.NameLabel: "other", kustomizev1.NamespaceLabel: "elsewhere",
		helmv2.NameLabel: "other", helmv2.NamespaceLabel: "elsewhere",
		"app": "web",
	}
	for _, owner := range []Owner{
		{Kind: helmv2.HelmReleaseKind, Namespace: "apps", Name: "web"},
		{Kind: kustomizev1.KustomizationKind, Namespace: "apps", Name: "web"},
	} {
		a := object.Stub("v1", "ConfigMap", "apps", "settings")
		labels := map[string]string{}
		for k, v := range foreign {
			labels[k] = v
		}
		a.SetLabels(labels)
		_, err := Stamp(a, owner)
		g.Expect(err).NotTo(HaveOccurred())
		nameKey, nsKey := owner.LabelKeys()
		g.Expect(a.GetLabels()).To(Equal(map[string]string{nameKey: "web", nsKey: "apps", "app": "web"}), owner.Kind)
		got, ok := OwnerOf(a.GetLabels())
		g.Expect(ok).To(BeTrue())
		g.Expect(got).To(Equal(owner))
	}
}

func TestResolve(t *testing.T) {
	g := NewWithT(t)
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, apimeta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, apimeta.RESTScopeRoot)

	cm := object.Stub("v1", "ConfigMap", "", "settings")
	g.Expect(Resolve(mapper, cm, "apps")).To(Succeed())
	g.Expect(cm.GetNamespace()).To(Equal("apps"))

	ns := object.Stub("v1", "Namespace", "wrong", "apps")
	g.Expect(Resolve(mapper, ns, "apps")).To(Succeed())
	g.Expect(ns.GetNamespace()).To(BeEmpty())

	err := Resolve(mapper, object.Stub("example.com/v1", "Widget", "", "w"), "apps")
	g.Expect(err).To(MatchError(ContainSubstring("is its CRD installed?")))
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "it wraps the mapper's NoKindMatch error")
}

func TestKeptBy(t *testing.T) {
	g := NewWithT(t)
	ann := func(a map[string]string) flux.Maps { return flux.Maps{Annotations: a} }
	for _, why := range []Pruning{LeftTheSet, OwnerDeleted} {
		g.Expect(KeptBy(flux.Maps{}, why)).To(BeEmpty())
		g.Expect(KeptBy(ann(map[string]string{kustomizev1.PruneAnnotation: kustomizev1.EnabledValue}), why)).To(BeEmpty())
		g.Expect(KeptBy(ann(map[string]string{kustomizev1.PruneAnnotation: kustomizev1.DisabledValue}), why)).To(Equal("annotation plumb.dev/prune: disabled"))
		g.Expect(KeptBy(ann(map[string]string{helmv2.ResourcePolicyAnnotation: " Keep "}), why)).To(Equal("annotation helm.sh/resource-policy: keep"))
		g.Expect(KeptBy(ann(map[string]string{helmv2.ResourcePolicyAnnotation: "delete"}), why)).To(BeEmpty())

		// Flux's keys keep an object from both prunes, as a label or an
		// annotation, in any case.
		g.Expect(KeptBy(ann(map[string]string{flux.PruneKey: "disabled"}), why)).To(Equal("annotation kustomize.toolkit.fluxcd.io/prune: disabled"))
		g.Expect(KeptBy(flux.Maps{Labels: map[string]string{flux.PruneKey: "Disabled"}}, why)).To(Equal("label kustomize.toolkit.fluxcd.io/prune: Disabled"))
		g.Expect(KeptBy(ann(map[string]string{flux.ReconcileKey: "disabled"}), why)).To(Equal("annotation kustomize.toolkit.fluxcd.io/reconcile: disabled"))
		g.Expect(KeptBy(ann(map[string]string{flux.SSAKey: "Ignore"}), why)).To(Equal("annotation kustomize.toolkit.fluxcd.io/ssa: Ignore"))
		g.Expect(KeptBy(ann(map[string]string{flux.SSAKey: "Merge", flux.PruneKey: "enabled"}), why)).To(BeEmpty())
		// Plumb's own annotation decides over Flux's prune key.
		g.Expect(KeptBy(ann(map[string]string{kustomizev1.PruneAnnotation: kustomizev1.EnabledValue, flux.PruneKey: "disabled"}), why)).To(BeEmpty())
		g.Expect(KeptBy(ann(map[string]string{kustomizev1.PruneAnnotation: kustomizev1.EnabledValue, flux.ReconcileKey: "disabled"}), why)).
			To(Equal("annotation kustomize.toolkit.fluxcd.io/reconcile: disabled"), "reconcile: disabled has no Plumb counterpart")
	}
	// Argo CD's options keep an object from one prune each.
	noPrune := ann(map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"})
	noDelete := ann(map[string]string{"argocd.argoproj.io/sync-options": "Validate=false, Delete=false"})
	g.Expect(KeptBy(noPrune, LeftTheSet)).To(Equal("annotation argocd.argoproj.io/sync-options: Prune=false"))
	g.Expect(KeptBy(noPrune, OwnerDeleted)).To(BeEmpty())
	g.Expect(KeptBy(noDelete, OwnerDeleted)).To(Equal("annotation argocd.argoproj.io/sync-options: Delete=false"))
	g.Expect(KeptBy(noDelete, LeftTheSet)).To(BeEmpty())
}

func TestCreateOnlyAndExcluded(t *testing.T) {
	g := NewWithT(t)
	ann := func(a map[string]string) flux.Maps { return flux.Maps{Annotations: a} }
	g.Expect(CreateOnly(ann(map[string]string{kustomizev1.SSAAnnotation: kustomizev1.IfNotPresentValue}))).To(Equal("annotation plumb.dev/ssa: IfNotPresent"))
	g.Expect(CreateOnly(ann(map[string]string{flux.SSAKey: "ifnotpresent"}))).To(Equal("annotation kustomize.toolkit.fluxcd.io/ssa: ifnotpresent"))
	g.Expect(CreateOnly(flux.Maps{Labels: map[string]string{flux.SSAKey: "IfNotPresent"}})).To(Equal("label kustomize.toolkit.fluxcd.io/ssa: IfNotPresent"))
	g.Expect(CreateOnly(ann(map[string]string{flux.SSAKey: "Merge"}))).To(BeEmpty())
	// plumb.dev/ssa set to anything else decides over Flux's.
	g.Expect(CreateOnly(ann(map[string]string{kustomizev1.SSAAnnotation: "Other", flux.SSAKey: "IfNotPresent"}))).To(BeEmpty())

	g.Expect(Excluded(ann(map[string]string{flux.ReconcileKey: "Disabled"}))).To(Equal("annotation kustomize.toolkit.fluxcd.io/reconcile: Disabled"))
	g.Expect(Excluded(flux.Maps{Labels: map[string]string{flux.SSAKey: "ignore"}})).To(Equal("label kustomize.toolkit.fluxcd.io/ssa: ignore"))
	g.Expect(Excluded(ann(map[string]string{flux.ReconcileKey: "enabled", flux.SSAKey: "Override"}))).To(BeEmpty())
	g.Expect(Excluded(ann(map[string]string{flux.ReconcileKey: ""}))).To(BeEmpty(), "an empty value is no value")
	g.Expect(Excluded(ann(map[string]string{kustomizev1.SSAAnnotation: kustomizev1.IfNotPresentValue, flux.SSAKey: "Ignore"}))).To(BeEmpty())
}
