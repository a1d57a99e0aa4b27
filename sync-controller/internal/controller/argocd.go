package controller

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/object"
)

// maxSyncWarnings bounds status.sync.warnings: a repository of thousands
// of conflicting objects must not make the status unwritable.
const maxSyncWarnings = 20

// syncWarnings are what a sync of objs follows differently from what
// some annotation asks: a Plumb annotation and an Argo CD or Flux one
// that disagree (Plumb's is followed), and Argo CD sync options that a
// server-side apply cannot honour. Sorted, at most maxSyncWarnings, the
// last one counting the rest.
func syncWarnings(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		ann := o.GetAnnotations()
		if len(ann) == 0 && len(o.GetLabels()) == 0 {
			continue
		}
		id := object.IDOf(o).String()
		for _, c := range append(argocd.Conflicts(ann), flux.Conflicts(o)...) {
			out = append(out, id+": "+c.String())
		}
		if argocd.HasSyncOption(ann, argocd.ValidateDisabled) {
			out = append(out, id+": "+argocd.SyncOptionsAnnotation+": "+argocd.ValidateDisabled+
				" has no effect: Plumb applies server-side, and the API server refuses a field the schema does not declare whatever the client asks")
		}
	}
	sort.Strings(out)
	if len(out) > maxSyncWarnings {
		out = append(out[:maxSyncWarnings-1], fmt.Sprintf("and %d more", len(out)-maxSyncWarnings+1))
	}
	return out
}

// withCreatedNamespaces returns objs and, for each namespace that an
// object with Argo CD's CreateNamespace=true sync option is in (its own,
// or defaultNamespace) and that no Namespace of objs is, a Namespace
// that is created when missing and then left alone: never changed,
// never pruned, kept when the Kustomization is deleted, as Argo CD
// leaves the namespaces it creates. Plan hoists it ahead of the objects
// in it. The namespaces of extra are created so too (a HelmRelease's
// install.createNamespace: its release namespace).
func withCreatedNamespaces(objs []*unstructured.Unstructured, defaultNamespace string, extra ...string) []*unstructured.Unstructured {
	have := map[string]bool{}
	for _, o := range objs {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "Namespace" {
			have[o.GetName()] = true
		}
	}
	want := append([]string(nil), extra...)
	for _, o := range objs {
		if !argocd.HasSyncOption(o.GetAnnotations(), argocd.CreateNamespace) {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		want = append(want, ns)
	}
	var add []*unstructured.Unstructured
	for _, ns := range want {
		if ns == "" || have[ns] {
			continue
		}
		have[ns] = true
		n := object.Stub("v1", "Namespace", "", ns)
		n.SetAnnotations(map[string]string{
			kustomizev1.SSAAnnotation:   kustomizev1.IfNotPresentValue,
			kustomizev1.PruneAnnotation: kustomizev1.DisabledValue,
		})
		add = append(add, n)
	}
	if len(add) == 0 {
		return objs
	}
	return append(append(make([]*unstructured.Unstructured, 0, len(objs)+len(add)), objs...), add...)
}
