package inspect

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/kinds"
)

// objectPage is the answer of GET /api/objects/{kind}/{namespace}/{name}:
// the overview row's fields, then the object and what it is made of (the
// fields docs/design/ui.md says the front end reads).
type objectPage struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the Ready condition's status (True, False, Unknown), with
	// its reason and message.
	Ready     string `json:"ready"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Suspended bool   `json:"suspended"`
	// Revision is an applied kind's last applied revision, a source's
	// artifact revision.
	Revision string `json:"revision,omitempty"`
	// LastSync is when the newest sync finished.
	LastSync *metav1.Time `json:"lastSync,omitempty"`
	// Object is the object as the API server returned it, without
	// managedFields.
	Object     map[string]any     `json:"object"`
	Conditions []metav1.Condition `json:"conditions"`
	// Artifact is a source's artifact, or an applied kind's newest render.
	Artifact *meta.Artifact `json:"artifact,omitempty"`
	// Source is the nearest of Sources.
	Source *sourceSummary `json:"source,omitempty"`
	// Sources are what the object is built from, nearest first: a
	// Kustomization's GitRepository; a HelmRelease's HelmChart and the
	// chart's repository; a HelmChart's repository.
	Sources []sourceSummary `json:"sources"`

	// The rest is for the applied kinds only.
	Sync    *kustomizev1.SyncProgress `json:"sync,omitempty"`
	Drift   *kustomizev1.DriftStatus  `json:"drift,omitempty"`
	History *history                  `json:"history,omitempty"`
	Tree    []inspect.Node            `json:"tree,omitempty"`
	Hooks   []inspect.Node            `json:"hooks,omitempty"`
	// SyncPolicy is spec.syncPolicy (Automatic or Manual: the page offers
	// Sync); OutOfSync what a manual sync of the waiting render would do.
	SyncPolicy kustomizev1.SyncPolicy       `json:"syncPolicy,omitempty"`
	OutOfSync  *kustomizev1.OutOfSyncStatus `json:"outOfSync,omitempty"`
	// TreeNotes say what the tree lacks and why.
	TreeNotes []string `json:"treeNotes,omitempty"`

	// UsedBy are a source's Kustomizations and HelmReleases (usedby.go),
	// UsedByNote what the list may lack and why.
	UsedBy     []user `json:"usedBy,omitempty"`
	UsedByNote string `json:"usedByNote,omitempty"`

	// Image is for image-controller's kinds only (image.go).
	Image *imageView `json:"image,omitempty"`

	// Set is for an ObjectSet only (set.go).
	Set *setView `json:"set,omitempty"`
}

// sourceSummary is one source of an object, as the user may read it.
type sourceSummary struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the source's Ready condition's status, with its reason
	// and message.
	Ready    string `json:"ready,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	Revision string `json:"revision,omitempty"`
	URL      string `json:"url,omitempty"`
	// Error is why the source could not be read (it does not exist, the
	// user may not get it).
	Error string `json:"error,omitempty"`

	// An ImageRepository's image (status.canonicalImageName, else
	// spec.image), last scan and the number of tags it kept.
	Image    string       `json:"image,omitempty"`
	LastScan *metav1.Time `json:"lastScan,omitempty"`
	TagCount *int         `json:"tagCount,omitempty"`
}

// history is what status keeps of the releases or revisions applied.
type history struct {
	// Releases is a HelmRelease's status.history, newest first.
	Releases []helmv2.Snapshot `json:"releases,omitempty"`
	// Syncs is a Kustomization's status.history, newest first.
	Syncs meta.History `json:"syncs,omitempty"`
	// Note says what is not kept.
	Note string `json:"note,omitempty"`
}

type conditioned interface {
	GetConditions() []metav1.Condition
}

func (h *handlers) object(r *request) (any, error) {
	ctx := r.Context()
	page := &objectPage{Kind: r.kind.GVK.Kind, Namespace: r.obj.GetNamespace(), Name: r.obj.GetName(), Sources: []sourceSummary{}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r.obj)
	if err != nil {
		return nil, err
	}
	// A typed object read from the API server carries no type metadata.
	u["apiVersion"], u["kind"] = r.kind.GVK.GroupVersion().String(), r.kind.GVK.Kind
	unstructured.RemoveNestedField(u, "metadata", "managedFields")
	page.Object = u
	page.Conditions = []metav1.Condition{}
	if c, ok := r.obj.(conditioned); ok && c.GetConditions() != nil {
		page.Conditions = c.GetConditions()
	}
	page.Ready, page.Reason, page.Message = readyOf(page.Conditions)
	page.Suspended, _, _ = unstructured.NestedBool(u, "spec", "suspend")

	// A source shows the artifact it serves; an applier shows what it
	// applied, its sources and its history instead.
	if a, ok := r.obj.(meta.ArtifactHolder); ok {
		if _, applier := r.obj.(meta.Applier); !applier {
			page.Artifact = a.GetArtifact()
		}
	}
	imagePage(ctx, r.client, r.obj, page)
	usedBy(ctx, r.client, r.obj, r.kind.GVK.Kind, page)
	setPage(ctx, r.client, r.obj, page)
	switch o := r.obj.(type) {
	case *sourcev1.HelmChart:
		page.Sources = append(page.Sources, chartSource(ctx, r.client, o))
	case *kustomizev1.Kustomization:
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		srcKind, ok := kinds.Lookup(o.Spec.SourceRef.Kind)
		if !ok || !srcKind.Source {
			srcKind, _ = kinds.Lookup(sourcev1.GitRepositoryKind)
		}
		page.Sources = append(page.Sources, readSource(ctx, r.client, srcKind.New(), srcKind.GVK.Kind, types.NamespacedName{Namespace: ns, Name: o.Spec.SourceRef.Name}))
		page.History = &history{Syncs: o.Status.History}
		if len(o.Status.History) == 0 {
			page.History.Note = "no sync yet"
		}
	case *helmv2.HelmRelease:
		key := inspect.HelmChartKey(o)
		if k, ok := kinds.Lookup(o.GetChartSourceKind()); ok && k.GVK.Kind != sourcev1.HelmChartKind {
			// A chartRef's OCIRepository or ExternalArtifact is the
			// chart's source itself.
			page.Sources = append(page.Sources, readSource(ctx, r.client, k.New(), k.GVK.Kind, key))
		} else {
			chart := &sourcev1.HelmChart{}
			page.Sources = append(page.Sources, readSource(ctx, r.client, chart, sourcev1.HelmChartKind, key))
			if chart.Name != "" {
				page.Sources = append(page.Sources, chartSource(ctx, r.client, chart))
			}
		}
		page.History = &history{Releases: o.Status.History}
		if len(o.Status.History) == 0 {
			page.History.Note = "no release yet"
		}
	}
	if page.Artifact != nil {
		page.Revision = page.Artifact.Revision
	}
	if len(page.Sources) > 0 {
		page.Source = &page.Sources[0]
	}
	if a, ok := inspect.AppliedOf(r.obj); ok {
		page.Artifact = a.Rendered
		page.Sync, page.Drift, page.Revision = a.Sync, a.Drift, a.LastApplied
		page.SyncPolicy, page.OutOfSync = a.SyncPolicy, a.ManualSync.OutOfSync
		if a.Sync != nil {
			page.LastSync = a.Sync.FinishedAt
		}
		tree := inspect.BuildTree(ctx, r.client, a, func(ctx context.Context) ([]*unstructured.Unstructured, string) {
			return h.rendered(ctx, r, a)
		})
		page.Tree, page.Hooks, page.TreeNotes = tree.Nodes, tree.Hooks, tree.Notes
	}
	return page, nil
}

// rendered downloads the newest render of a (with the user's identity when
// it goes through the API server's service proxy); nil and why when it is
// not at hand.
func (h *handlers) rendered(ctx context.Context, r *request, a *inspect.Applied) ([]*unstructured.Unstructured, string) {
	if a.Rendered == nil {
		return nil, "nothing rendered yet: waves and hooks are not known"
	}
	hc, err := r.artifactClient()
	if err != nil {
		h.opts.Log.Error(err, "no artifact client")
		return nil, "the rendered artifact is not at hand, so waves and hooks are not known"
	}
	objs, err := inspect.FetchRendered(ctx, hc, a.Rendered)
	if err != nil {
		return nil, "the rendered artifact is not at hand, so waves and hooks are not known: " + err.Error()
	}
	return objs, ""
}

// readSource reads one source into obj and sums it up; an error reading
// it is part of the summary, not of the page.
func readSource(ctx context.Context, c client.Client, obj client.Object, kind string, key types.NamespacedName) sourceSummary {
	s := sourceSummary{Kind: kind, Namespace: key.Namespace, Name: key.Name}
	if err := c.Get(ctx, key, obj); err != nil {
		s.Error = err.Error()
		return s
	}
	if c, ok := obj.(conditioned); ok {
		s.Ready, s.Reason, s.Message = readyOf(c.GetConditions())
	}
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		s.URL = o.Spec.URL
	case *sourcev1.HelmRepository:
		s.URL = o.Spec.URL
	case *sourcev1.OCIRepository:
		s.URL = o.Spec.URL
	case *imagev1.ImageRepository:
		s.Image = o.Spec.Image
		if o.Status.CanonicalImageName != "" {
			s.Image = o.Status.CanonicalImageName
		}
		if r := o.Status.LastScanResult; r != nil {
			s.Revision, s.LastScan, s.TagCount = r.Revision, &r.ScanTime, &r.TagCount
		}
	}
	if h, ok := obj.(meta.ArtifactHolder); ok && h.GetArtifact() != nil {
		s.Revision = h.GetArtifact().Revision
	}
	return s
}

// chartSource reads a HelmChart's source (a GitRepository or
// HelmRepository), of the kind its spec.sourceRef names (pkg/kinds); a
// kind pkg/kinds does not know (the CRD allows none) is read as a
// HelmRepository.
func chartSource(ctx context.Context, c client.Client, chart *sourcev1.HelmChart) sourceSummary {
	key := types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}
	k, ok := kinds.Lookup(chart.Spec.SourceRef.Kind)
	if !ok || k.GVK.Kind != chart.Spec.SourceRef.Kind {
		k, _ = kinds.Lookup(sourcev1.HelmRepositoryKind)
	}
	return readSource(ctx, c, k.New(), k.GVK.Kind, key)
}

// readyOf is the Ready condition's status, reason and message; Unknown
// when there is none.
func readyOf(conds []metav1.Condition) (status, reason, message string) {
	c := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	if c == nil {
		return string(metav1.ConditionUnknown), "", ""
	}
	return string(c.Status), c.Reason, c.Message
}
