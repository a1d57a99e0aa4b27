package inspect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// maxUsers bounds the Kustomizations and HelmReleases listed, of each
// kind, to find a source's users.
const maxUsers = 500

// user is a Kustomization or HelmRelease built from a source.
type user struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     string `json:"ready,omitempty"`
	Revision  string `json:"revision,omitempty"`
}

// usedBy fills a source's page with the Kustomizations and HelmReleases
// that name it (a Kustomization's sourceRef; a HelmRelease's chartRef, or
// its chart's sourceRef), listed as the user: in every namespace when the
// user may (a reference may cross namespaces), else in the source's own,
// and the note says so; a kind the user may not list there is named in
// the note, not guessed.
func usedBy(ctx context.Context, c client.Client, src client.Object, kind string, page *objectPage) {
	switch kind {
	case sourcev1.GitRepositoryKind, sourcev1.OCIRepositoryKind, sourcev1.BucketKind, sourcev1.ExternalArtifactKind, sourcev1.HelmRepositoryKind:
	default:
		return
	}
	page.UsedBy = []user{}
	same := func(refKind, refNS, refName, ownNS string) bool {
		if refNS == "" {
			refNS = ownNS
		}
		return refKind == kind && refName == src.GetName() && refNS == src.GetNamespace()
	}
	var notes []string
	list := func(l client.ObjectList, what string) bool {
		err := c.List(ctx, l, client.Limit(maxUsers))
		if apierrors.IsForbidden(err) {
			err = c.List(ctx, l, client.InNamespace(src.GetNamespace()), client.Limit(maxUsers))
			if err == nil {
				notes = append(notes, "only "+what+" in "+src.GetNamespace()+" (you may not list them in every namespace)")
			}
		}
		if err != nil {
			notes = append(notes, what+" not read: "+err.Error())
			return false
		}
		if meta, ok := l.(interface{ GetContinue() string }); ok && meta.GetContinue() != "" {
			notes = append(notes, "only the first of many "+what)
		}
		return true
	}
	if kind != sourcev1.HelmRepositoryKind {
		ks := &kustomizev1.KustomizationList{}
		if list(ks, "Kustomizations") {
			for _, o := range ks.Items {
				ref := o.Spec.SourceRef
				if same(ref.Kind, ref.Namespace, ref.Name, o.Namespace) {
					ready, _, _ := readyOf(o.Status.Conditions)
					page.UsedBy = append(page.UsedBy, user{Kind: kustomizev1.KustomizationKind, Namespace: o.Namespace, Name: o.Name, Ready: ready, Revision: o.Status.LastAppliedRevision})
				}
			}
		}
	}
	hrs := &helmv2.HelmReleaseList{}
	if list(hrs, "HelmReleases") {
		for _, o := range hrs.Items {
			uses := false
			if r := o.Spec.ChartRef; r != nil {
				uses = same(r.Kind, r.Namespace, r.Name, o.Namespace)
			}
			if ch := o.Spec.Chart; ch != nil {
				r := ch.Spec.SourceRef
				uses = uses || same(r.Kind, r.Namespace, r.Name, o.Namespace)
			}
			if uses {
				ready, _, _ := readyOf(o.Status.Conditions)
				page.UsedBy = append(page.UsedBy, user{Kind: helmv2.HelmReleaseKind, Namespace: o.Namespace, Name: o.Name, Ready: ready})
			}
		}
	}
	for i, n := range notes {
		if i > 0 {
			page.UsedByNote += "; "
		}
		page.UsedByNote += n
	}
}
