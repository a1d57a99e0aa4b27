package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/helmvalues"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/render-controller/internal/rendered"
)

// Indexes of HelmReleases: by "<namespace>/<name>" of the HelmChart they
// render, and by helmvalues.Source of each valuesFrom object.
const (
	helmChartIndexKey  = ".helmChart"
	valuesFromIndexKey = ".spec.valuesFrom"
)

// HelmReleaseReconciler renders HelmReleases into manifests artifacts: it
// keeps the HelmChart of spec.chart, waits for its artifact, merges the
// values and renders the chart with pkg/helmrender against the cluster's
// capabilities.
type HelmReleaseReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// Capabilities are what templates see of the cluster (--capabilities-ttl). Required.
	Capabilities *Capabilities

	// HTTPClient downloads chart artifacts; nil is a client with a 5
	// minute timeout on a transport of its own.
	HTTPClient *http.Client
	// DownloadAttempts and DownloadBackoff tune the retries of a download
	// (pkg/fetch defaults when zero).
	DownloadAttempts int
	DownloadBackoff  time.Duration
	// HelmLimits bound the chart archive (the download too:
	// --max-chart-size), its decompressed files
	// (--max-chart-extracted-size) and the values (--max-values-size: the
	// bytes read from valuesFrom and spec.values, and the merged values as
	// JSON). Its output, node and document limits, when zero, are
	// RenderLimits'.
	HelmLimits helmrender.Limits
	// RenderLimits and RenderTimeout bound each render, as a
	// Kustomization's (--max-yaml-nodes, --max-yaml-documents,
	// --max-rendered-size, --render-timeout; --max-yaml-nodes bounds each
	// values document too).
	RenderLimits  render.Limits
	RenderTimeout time.Duration
	// NoCrossNamespaceRefs refuses a HelmChart or chart source in another
	// namespace.
	NoCrossNamespaceRefs bool
	// DependencyRequeue is the wait while the HelmChart is not ready; the
	// HelmChart watch usually comes first. Zero means 10s.
	DependencyRequeue time.Duration
	// Renderer runs the renders in worker processes (the Kustomizations'
	// pool); nil is a pool of its own with pkg/renderworker's defaults
	// (tests).
	Renderer *renderworker.Pool

	*renderKind[*helmv2.HelmRelease]

	mu sync.Mutex
	// charts maps it to the digest of the HelmChart it last applied.
	charts map[types.NamespacedName]string
}

// SetupWithManager registers the reconciler: HelmReleases on creation, spec
// change and requestedAt annotation (not on the move from install to
// upgrade, which alone never re-renders: see reconcileHelmCache); HelmCharts
// whose artifact or readiness changed; the OCIRepositories and
// ExternalArtifacts of chartRefs whose artifact or observed generation
// changed; the ConfigMaps of valuesFrom (their
// metadata only: a change of their data changes their resourceVersion);
// and CustomResourceDefinitions, whose changes invalidate the capabilities.
//
// Secrets are not watched: a watch, even of metadata, needs list and watch
// on every Secret of the cluster, which would let render-controller read
// them all. It reads the Secrets of valuesFrom by name (the manager's
// client never caches Secrets), so a changed Secret is picked up at the
// next reconcile: spec.interval, a requestedAt annotation, or any other
// event of the HelmRelease.
func (r *HelmReleaseReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.setUp()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &helmv2.HelmRelease{}, helmChartIndexKey, func(o client.Object) []string {
		hr := o.(*helmv2.HelmRelease)
		if hr.GetChartSourceKind() != sourcev1.HelmChartKind {
			return nil
		}
		return []string{helmChartKey(hr).String()}
	}); err != nil {
		return fmt.Errorf("indexing HelmReleases by HelmChart: %w", err)
	}
	if err := idx.IndexField(ctx, &helmv2.HelmRelease{}, chartSourceIndexKey, chartSourceIndexValues); err != nil {
		return fmt.Errorf("indexing HelmReleases by chart source: %w", err)
	}
	if err := idx.IndexField(ctx, &helmv2.HelmRelease{}, valuesFromIndexKey, func(o client.Object) []string {
		var keys []string
		for _, s := range helmvalues.Sources(o.(*helmv2.HelmRelease)) {
			keys = append(keys, s.String())
		}
		return keys
	}); err != nil {
		return fmt.Errorf("indexing HelmReleases by valuesFrom: %w", err)
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdGVK)
	invalidate := func() { r.Capabilities.Invalidate() }
	b := ctrl.NewControllerManagedBy(mgr).
		Named("helmrelease-render").
		For(&helmv2.HelmRelease{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
			syncFinalizerReleased{},
			installStateChanged{},
		))).
		Watches(&sourcev1.HelmChart{},
			handler.EnqueueRequestsFromMapFunc(r.releasesOf(helmChartIndexKey, func(o client.Object) string {
				return client.ObjectKeyFromObject(o).String()
			})),
			builder.WithPredicates(chartChanged{})).
		Watches(&corev1.ConfigMap{},
			handler.EnqueueRequestsFromMapFunc(r.releasesOf(valuesFromIndexKey, valuesSourceKey("ConfigMap"))),
			builder.OnlyMetadata).
		Watches(crd, handler.Funcs{
			CreateFunc: func(context.Context, event.CreateEvent, handlerQueue) { invalidate() },
			UpdateFunc: func(context.Context, event.UpdateEvent, handlerQueue) { invalidate() },
			DeleteFunc: func(context.Context, event.DeleteEvent, handlerQueue) { invalidate() },
		})
	for _, kind := range artifactChartKinds {
		b = b.Watches(newSource(kind),
			handler.EnqueueRequestsFromMapFunc(r.releasesOf(chartSourceIndexKey, func(o client.Object) string {
				return sourceIndexValue(kind, client.ObjectKeyFromObject(o))
			})),
			builder.WithPredicates(chartArtifactChanged{}))
	}
	return b.WithOptions(opts).Complete(r)
}

type handlerQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func valuesSourceKey(kind string) func(client.Object) string {
	return func(o client.Object) string {
		return helmvalues.Source{Kind: kind, NamespacedName: client.ObjectKeyFromObject(o)}.String()
	}
}

// releasesOf maps an object to the HelmReleases whose index holds its key.
func (r *HelmReleaseReconciler) releasesOf(index string, key func(client.Object) string) handler.MapFunc {
	return plumbreconcile.Referrers(r.Client, func() client.ObjectList { return &helmv2.HelmReleaseList{} }, index, key, false)
}

// chartChanged passes HelmChart events that may let a HelmRelease render
// or change what it renders: a new artifact, readiness, a new generation
// observed.
type chartChanged struct{ predicate.Funcs }

func (chartChanged) Create(e event.CreateEvent) bool { return true }

func (chartChanged) Update(e event.UpdateEvent) bool {
	a, ok1 := e.ObjectOld.(*sourcev1.HelmChart)
	b, ok2 := e.ObjectNew.(*sourcev1.HelmChart)
	if !ok1 || !ok2 {
		return false
	}
	return !apiequality.Semantic.DeepEqual(a.Status.Artifact, b.Status.Artifact) ||
		a.Status.ObservedGeneration != b.Status.ObservedGeneration ||
		conditions.IsReady(a) != conditions.IsReady(b)
}

func (chartChanged) Delete(event.DeleteEvent) bool   { return true }
func (chartChanged) Generic(event.GenericEvent) bool { return false }

// installing reports whether the next sync of hr installs: no release of
// its history is deployed.
func installing(hr *helmv2.HelmRelease) bool {
	for _, s := range hr.Status.History {
		if s.Status == helmv2.ReleaseStatusDeployed {
			return false
		}
	}
	return true
}

// helmState is what one reconcile's steps hand to each other.
type helmState struct {
	// kind and chartKey name the chart's source: a HelmChart, an
	// OCIRepository or an ExternalArtifact (chartsource.go).
	kind     string
	chartKey types.NamespacedName
	// chart is the HelmChart, when the source is one.
	chart *sourcev1.HelmChart
	// artifact is the source's: the chart archive.
	artifact *meta.Artifact
	values   map[string]any
	// secrets hides the values read from Secrets in render errors.
	secrets    *helmvalues.Redactor
	caps       helmrender.Capabilities
	installing bool
	crds       string
	// inputs is the digest of what the render is made from
	// (renderInputs).
	inputs  string
	archive []byte
	result  *helmrender.Result
	// news: whether a good render is announced.
	news news
}

// setUp builds what this reconciler shares with the Kustomization one
// (renderKind): the store of HelmRelease renders and the skeleton, a
// partial controller as for Kustomizations. HelmRelease has no
// retryInterval: a failure is retried after spec.interval (a watched
// HelmChart or ConfigMap that changes comes sooner; a Secret is not
// watched).
func (r *HelmReleaseReconciler) setUp() {
	store := &rendered.Store{Storage: r.Storage, Events: r.Events, Metrics: r.Metrics, Kind: helmv2.HelmReleaseKind}
	sk := renderSkeleton(r.Client, store, "chart version",
		func(obj *helmv2.HelmRelease) *meta.Artifact { return obj.Status.RenderedArtifact }, helmOwnedStatus, r.forget, r.finalize)
	sk.DefaultReason = meta.FailedReason
	sk.RetryInterval = func(obj *helmv2.HelmRelease) time.Duration { return obj.Spec.Interval.Duration }
	r.renderKind = newRenderKind(store, sk, r.Renderer, r.HTTPClient)
}

// Reconcile runs the steps chart, source, values, capabilities, cache,
// download, render, store and announce, stopping at the first error or at
// an up-to-date cache.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &helmv2.HelmRelease{}
	if ok, err := r.start(ctx, r.Client, req, obj, r.forget, nil); !ok {
		return ctrl.Result{}, err
	}
	st := &helmState{news: newsAtStart(obj)}
	return r.run(ctx, obj,
		plumbreconcile.Bind("chart", r.reconcileChart, obj, st),
		plumbreconcile.Bind("source", r.reconcileChartSource, obj, st),
		plumbreconcile.Bind("values", r.reconcileValues, obj, st),
		plumbreconcile.Bind("capabilities", r.reconcileCapabilities, obj, st),
		plumbreconcile.Bind("cache", r.reconcileHelmCache, obj, st),
		plumbreconcile.Bind("download", r.reconcileChartDownload, obj, st),
		plumbreconcile.Bind("render", r.reconcileRender, obj, st),
		plumbreconcile.Bind("store", r.reconcileHelmStore, obj, st),
		plumbreconcile.Bind("announce", r.reconcileHelmAnnounce, obj, st),
	)
}

// finalize deletes the HelmChart this HelmRelease owns, then lets the
// object go; its rendered artifacts are gone already (renderSkeleton:
// after sync-controller's finalizer, and forget). A HelmChart it does not
// own (a chartRef) is left alone.
func (r *HelmReleaseReconciler) finalize(ctx context.Context, obj *helmv2.HelmRelease) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	keys := []types.NamespacedName{}
	if obj.Spec.Chart != nil {
		keys = append(keys, helmChartKey(obj))
	}
	if k, ok := parseKey(obj.Status.HelmChart); ok {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if err := r.deleteOwnedChart(ctx, obj, k); err != nil {
			return err
		}
	}
	return client.IgnoreNotFound(plumbreconcile.SetFinalizer(ctx, r.Client, obj, FieldManager, Finalizer, false))
}

// reconcileChart settles which HelmChart is rendered and records it in
// status.helmChart. For spec.chart it creates or updates, by server-side
// apply, the HelmChart <namespace>-<name> in the sourceRef's namespace,
// labelled with this HelmRelease as its owner; for spec.chartRef it takes
// the source named (status.helmChart is empty for an OCIRepository or an
// ExternalArtifact, as in Flux). A HelmChart this HelmRelease created earlier and no longer
// renders (spec.chart replaced by chartRef, or moved) is deleted. Sets
// Rendered=False with reason InvalidSpec (stalled) for a reference into
// another namespace while --no-cross-namespace-refs is set, and
// HelmChartFailed when the HelmChart cannot be applied or deleted, or is
// someone else's.
func (r *HelmReleaseReconciler) reconcileChart(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	key := helmChartKey(obj)
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		field := "spec.chartRef"
		if obj.Spec.Chart != nil {
			field = "spec.chart.spec.sourceRef"
		}
		return plumbreconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf(
			"cross-namespace references are not allowed: %s names namespace %s, outside namespace %s", field, key.Namespace, obj.Namespace))
	}
	st.kind = obj.GetChartSourceKind()
	if prev, ok := parseKey(obj.Status.HelmChart); ok && (prev != key || st.kind != sourcev1.HelmChartKind) {
		if err := r.deleteOwnedChart(ctx, obj, prev); err != nil {
			return err
		}
	}
	st.chartKey = key
	if obj.Spec.Chart != nil {
		if err := r.applyChart(ctx, obj, st); err != nil {
			return err
		}
	}
	obj.Status.HelmChart = ""
	if st.kind == sourcev1.HelmChartKind {
		obj.Status.HelmChart = key.String()
	}
	return nil
}

// applyChart server-side-applies the HelmChart of spec.chart, unless the
// one in the cache is what this controller applied last and its spec is
// as wanted.
func (r *HelmReleaseReconciler) applyChart(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	want := desiredChart(obj)
	digest := chartDigest(want)
	var existing sourcev1.HelmChart
	err := r.Get(ctx, st.chartKey, &existing)
	switch {
	case err == nil:
		if !ownedBy(&existing, obj) {
			return plumbreconcile.Failed(helmv2.HelmChartFailedReason, fmt.Errorf(
				"HelmChart %s exists and does not belong to this HelmRelease (its labels %s and %s do not name it); rename or delete it",
				st.chartKey, helmv2.NamespaceLabel, helmv2.NameLabel))
		}
		r.mu.Lock()
		applied := r.charts[client.ObjectKeyFromObject(obj)]
		r.mu.Unlock()
		if applied == digest && apiequality.Semantic.DeepEqual(existing.Spec, want.Spec) {
			st.chart = &existing
			return nil
		}
	case !apierrors.IsNotFound(err):
		return plumbreconcile.Failed(helmv2.HelmChartFailedReason, fmt.Errorf("reading HelmChart %s: %w", st.chartKey, err))
	}
	u, err := chartApplyObject(want)
	if err != nil {
		return err
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return plumbreconcile.Failed(helmv2.HelmChartFailedReason, fmt.Errorf("applying HelmChart %s: %w", st.chartKey, err))
	}
	// The answer is the HelmChart as stored now: its generation says
	// whether source-controller has seen this spec yet.
	var applied sourcev1.HelmChart
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &applied); err != nil {
		return fmt.Errorf("reading back HelmChart %s: %w", st.chartKey, err)
	}
	st.chart = &applied
	r.mu.Lock()
	if r.charts == nil {
		r.charts = map[types.NamespacedName]string{}
	}
	r.charts[client.ObjectKeyFromObject(obj)] = digest
	r.mu.Unlock()
	return nil
}

// desiredChart is the HelmChart of spec.chart: labels and annotations of
// chart.metadata plus the owner labels, the template's spec, and the
// HelmRelease's interval when the template has none. It carries the
// HelmRelease's shard key unless the template names one, so that the
// source-controller of the HelmRelease's shard builds it.
func desiredChart(obj *helmv2.HelmRelease) *sourcev1.HelmChart {
	t := obj.Spec.Chart
	labels := map[string]string{}
	if shard, ok := obj.Labels[meta.ShardKeyLabel]; ok {
		labels[meta.ShardKeyLabel] = shard
	}
	var annotations map[string]string
	if t.ObjectMeta != nil {
		maps.Copy(labels, t.ObjectMeta.Labels)
		annotations = maps.Clone(t.ObjectMeta.Annotations)
	}
	labels[helmv2.NameLabel] = obj.Name
	labels[helmv2.NamespaceLabel] = obj.Namespace
	interval := obj.Spec.Interval
	if t.Spec.Interval != nil {
		interval = *t.Spec.Interval
	}
	key := helmChartKey(obj)
	return &sourcev1.HelmChart{
		TypeMeta: metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmChartKind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name, Labels: labels, Annotations: annotations,
		},
		Spec: sourcev1.HelmChartSpec{
			Chart:   t.Spec.Chart,
			Version: t.Spec.Version,
			SourceRef: sourcev1.LocalHelmChartSourceReference{
				APIVersion: t.Spec.SourceRef.APIVersion, Kind: t.Spec.SourceRef.Kind, Name: t.Spec.SourceRef.Name,
			},
			Interval:                 interval,
			ReconcileStrategy:        t.Spec.ReconcileStrategy,
			ValuesFiles:              t.Spec.ValuesFiles,
			IgnoreMissingValuesFiles: t.Spec.IgnoreMissingValuesFiles,
		},
	}
}

// chartApplyObject is hc as an apply configuration: metadata's name,
// namespace, labels and annotations and the spec, nothing else (no status,
// no creationTimestamp to own).
func chartApplyObject(hc *sourcev1.HelmChart) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&hc.Spec)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(hc.APIVersion)
	u.SetKind(hc.Kind)
	u.SetNamespace(hc.Namespace)
	u.SetName(hc.Name)
	u.SetLabels(hc.Labels)
	if len(hc.Annotations) > 0 {
		u.SetAnnotations(hc.Annotations)
	}
	return u, nil
}

func chartDigest(hc *sourcev1.HelmChart) string {
	b, _ := json.Marshal(struct {
		L, A map[string]string
		S    sourcev1.HelmChartSpec
	}{hc.Labels, hc.Annotations, hc.Spec})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ownedBy reports whether hc carries the owner labels of obj. They stand
// in for an owner reference, which cannot cross namespaces.
func ownedBy(hc *sourcev1.HelmChart, obj *helmv2.HelmRelease) bool {
	return hc.Labels[helmv2.NameLabel] == obj.Name && hc.Labels[helmv2.NamespaceLabel] == obj.Namespace
}

// deleteOwnedChart deletes the HelmChart at key when obj owns it.
func (r *HelmReleaseReconciler) deleteOwnedChart(ctx context.Context, obj *helmv2.HelmRelease, key types.NamespacedName) error {
	var hc sourcev1.HelmChart
	if err := r.Get(ctx, key, &hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return plumbreconcile.Failed(helmv2.HelmChartFailedReason, fmt.Errorf("reading HelmChart %s: %w", key, err))
	}
	if !ownedBy(&hc, obj) {
		return nil
	}
	err := r.Delete(ctx, &hc, client.Preconditions{UID: &hc.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return plumbreconcile.Failed(helmv2.HelmChartFailedReason, fmt.Errorf("deleting HelmChart %s: %w", key, err))
	}
	r.mu.Lock()
	delete(r.charts, client.ObjectKeyFromObject(obj))
	r.mu.Unlock()
	return nil
}

// reconcileChartSource waits for the HelmChart: Rendered=False with reason
// DependencyNotReady ("waiting for HelmChart <ns>/<name>: …") while it is
// missing, has a generation source-controller has not reconciled yet, is
// not Ready or has no artifact. An OCIRepository or ExternalArtifact is
// waited for by waitArtifactChart.
func (r *HelmReleaseReconciler) reconcileChartSource(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	if st.kind != sourcev1.HelmChartKind {
		return r.waitArtifactChart(ctx, st)
	}
	hc := st.chart
	if hc == nil {
		hc = &sourcev1.HelmChart{}
		if err := r.Get(ctx, st.chartKey, hc); err != nil {
			if apierrors.IsNotFound(err) {
				return r.waitChart(st, "it does not exist")
			}
			return err
		}
		st.chart = hc
	}
	ready := conditions.Get(hc, meta.ReadyCondition)
	a := hc.Status.Artifact
	switch {
	case hc.Status.ObservedGeneration != hc.Generation:
		return r.waitChart(st, fmt.Sprintf("source-controller has not reconciled generation %d yet", hc.Generation))
	case ready == nil || ready.Status != metav1.ConditionTrue:
		why := "it is not Ready"
		if ready != nil && ready.Message != "" {
			why += ": " + ready.Message
		}
		return r.waitChart(st, why)
	case a == nil || a.URL == "" || a.Digest == "":
		return r.waitChart(st, "it has no artifact yet")
	}
	st.artifact = a
	return nil
}

func (r *HelmReleaseReconciler) waitChart(st *helmState, why string) error {
	return plumbreconcile.Waiting(meta.DependencyNotReadyReason, defaulted(r.DependencyRequeue, defaultDependencyRequeue),
		fmt.Errorf("waiting for %s %s: %s", st.kind, st.chartKey, why))
}

// reconcileValues merges valuesFrom and values (pkg/helmvalues) and decides
// install or upgrade: .Release.IsInstall and the CRD policy (install.crds
// while no release is deployed, upgrade.crds after). Sets Rendered=False
// with reason ValuesFailed (a missing object or key, bad YAML, a bad
// targetPath) or LimitExceeded (--max-values-size, --max-yaml-nodes).
func (r *HelmReleaseReconciler) reconcileValues(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	limits := r.helmLimits()
	values, secrets, err := helmvalues.MergeSecrets(ctx, r.Client, obj, helmvalues.Limits{MaxBytes: limits.MaxValuesBytes, MaxNodes: limits.MaxNodes})
	st.secrets = secrets
	if err != nil {
		reason := helmv2.ValuesFailedReason
		var le *helmvalues.LimitError
		if errors.As(err, &le) {
			reason = meta.LimitExceededReason
		}
		// A targetPath's parse error may quote the Secret's value.
		return plumbreconcile.Failed(reason, errors.New(secrets.Redact(err.Error())))
	}
	st.values = values
	st.installing = installing(obj)
	st.crds = obj.GetUpgradeCRDs()
	if st.installing {
		st.crds = obj.GetInstallCRDs()
	}
	return nil
}

// reconcileCapabilities reads the cluster's capabilities (cached; see
// Capabilities). A failed discovery is Rendered=False, Failed: rendering
// with made-up capabilities could render objects for APIs the cluster does
// not serve, or leave out the ones it does.
func (r *HelmReleaseReconciler) reconcileCapabilities(ctx context.Context, _ *helmv2.HelmRelease, st *helmState) error {
	caps, _, err := r.Capabilities.Get(ctx)
	if err != nil {
		return plumbreconcile.Failed(meta.FailedReason, err)
	}
	st.caps = caps
	return nil
}

// reconcileHelmCache computes the digest of the render's inputs
// (renderInputs) and ends the reconcile (plumbreconcile.ErrStop) when the
// stored render was made from the same inputs — the digest recorded in
// status.renderedArtifact.metadata, so this holds across restarts — and
// its artifact still verifies. The install state is no input: the move
// from install to upgrade alone does not re-render (a chart with crds/ or
// templates reading .Release.IsInstall would render differently, and
// sync-controller would make a new release of it, which Helm and Flux do
// not). It counts only when something else makes a new render.
func (r *HelmReleaseReconciler) reconcileHelmCache(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	st.inputs = renderInputs(obj, st)
	a := obj.Status.RenderedArtifact
	if a == nil || a.Metadata[helmv2.ArtifactInputsDigestKey] != st.inputs || installRenderOutgrown(obj, a) {
		return nil
	}
	if !r.store.Intact(ctx, a) {
		return nil
	}
	if !conditions.IsTrue(obj, kustomizev1.RenderedCondition) {
		// Back from a failure or a wait to the inputs of the stored
		// render: it is the render again.
		r.store.Announce(obj, a, fmt.Sprintf("serving the render of chart %s version %q: its chart, values and spec are unchanged",
			a.Metadata[helmv2.ArtifactChartNameKey], a.Revision), st.news.any(), renderedEvent(a, ""))
	}
	return plumbreconcile.ErrStop
}

// renderInputs is "sha256:<hex>" of everything a render depends on but the
// install state: the chart artifact, the merged values (config digest),
// the release name and namespace, both CRD policies, the post-renderers
// and commonMetadata, and both actions' disableSchemaValidation. The capabilities are left out, as the install state is:
// Helm and Flux evaluate them when a release is made for another reason,
// and a CRD added anywhere in the cluster (often by the chart's own crds/)
// must not make every HelmRelease a new release. The controller's limits
// are left out too: they decide whether a render is refused, not what it
// is. format names this list and what a render holds (2: Helm's
// ownership metadata and the release record); changing either changes
// it, which renders everything once again.
func renderInputs(obj *helmv2.HelmRelease, st *helmState) string {
	b, _ := json.Marshal(struct {
		Format        int                   `json:"format"`
		Chart         string                `json:"chart"`
		Config        string                `json:"config"`
		Release       string                `json:"release"`
		Namespace     string                `json:"namespace"`
		InstallCRDs   string                `json:"installCRDs"`
		UpgradeCRDs   string                `json:"upgradeCRDs"`
		PostRenderers []helmv2.PostRenderer `json:"postRenderers"`
		Capabilities  string                `json:"capabilities"`
		// Omitted when unset, so that the digests of releases without
		// them stay what they were. The revision of an OCIRepository's or
		// ExternalArtifact's artifact makes the release's revision
		// (chartRevision): the same chart under another tag or manifest
		// digest is another release, as in Flux.
		CommonMetadata *kustomizev1.CommonMetadata `json:"commonMetadata,omitempty"`
		Revision       string                      `json:"revision,omitempty"`
		// Both actions', as for the CRD policies, so that the move from
		// install to upgrade alone changes nothing; left out when false,
		// so that a release which sets neither keeps the digest it had
		// before the switches existed.
		InstallNoSchema bool `json:"installDisableSchemaValidation,omitempty"`
		UpgradeNoSchema bool `json:"upgradeDisableSchemaValidation,omitempty"`
	}{
		Format:          2,
		Chart:           st.artifact.Digest,
		Config:          helmv2.ConfigDigest(st.values),
		Release:         obj.GetReleaseName(),
		Namespace:       obj.GetReleaseNamespace(),
		InstallCRDs:     obj.GetInstallCRDs(),
		UpgradeCRDs:     obj.GetUpgradeCRDs(),
		PostRenderers:   obj.Spec.PostRenderers,
		CommonMetadata:  obj.Spec.CommonMetadata,
		Revision:        artifactRevision(st),
		InstallNoSchema: obj.GetActionSwitches(true).DisableSchemaValidation,
		UpgradeNoSchema: obj.GetActionSwitches(false).DisableSchemaValidation,
	})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// reconcileChartDownload fetches the chart's .tgz with retries, within
// spec.timeout and --max-chart-size, and checks its sha256 digest; the
// archive stays in memory (pkg/helmrender reads it from there, within its
// own limits). Sets Rendered=False (ArtifactFailed) on any failure.
func (r *HelmReleaseReconciler) reconcileChartDownload(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	a := st.artifact
	ctx, cancel := context.WithTimeout(ctx, obj.GetTimeout().Duration)
	defer cancel()
	data, err := fetch.Bytes(ctx, a.URL, a.Digest, fetch.Options{
		Client:   r.downloads,
		MaxSize:  r.helmLimits().MaxArchiveBytes,
		Attempts: r.DownloadAttempts,
		Backoff:  r.DownloadBackoff,
	})
	if err != nil {
		return plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf(
			"downloading the chart artifact of %s %s (revision %q) failed: %w", st.kind, st.chartKey, a.Revision, err))
	}
	st.archive = data
	return nil
}

// reconcileRender renders the chart with pkg/helmrender in a render worker
// (pkg/renderworker: its own process with hard memory, CPU and file
// limits, killed at --render-timeout): release name and namespace, the
// merged values, the capabilities, install or upgrade, the CRD policy and
// the post-renderers, within the render limits. Sets Rendered=False with
// the render error's reason (the message names the template file for a
// template error); a LimitExceeded is not tried again for the same inputs
// until its backoff has passed (limitHolds).
func (r *HelmReleaseReconciler) reconcileRender(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	res, err := runRender(ctx, r.renderKind, obj, st.inputs, defaulted(r.RenderTimeout, DefaultRenderTimeout),
		obj.Spec.Interval.Duration, obj.Spec.Interval.Duration, func(ctx context.Context) (*helmrender.Result, error) {
			res, err := r.pool.Helm(ctx, st.archive, helmrender.Options{
				ReleaseName:             obj.GetReleaseName(),
				Namespace:               obj.GetReleaseNamespace(),
				Values:                  st.values,
				Capabilities:            st.caps,
				IsInstall:               st.installing,
				Revision:                nextRevision(obj),
				CRDs:                    st.crds,
				PostRenderers:           obj.Spec.PostRenderers,
				CommonMetadata:          obj.Spec.CommonMetadata,
				Limits:                  r.helmLimits(),
				Record:                  true,
				DisableSchemaValidation: obj.GetActionSwitches(st.installing).DisableSchemaValidation,
			})
			if err != nil {
				// A template's fail, tpl or include, or a schema, may quote
				// a value: Secret values never reach the status, events or
				// logs.
				err = &render.Error{Reason: render.Reason(err), Err: fmt.Errorf("rendering chart %s of %s %s: %s",
					st.artifact.Revision, st.kind, st.chartKey, st.secrets.Redact(err.Error()))}
			}
			return res, err
		})
	st.archive = nil
	st.result = res
	return err
}

// reconcileHelmStore stores the manifests as obj's rendered artifact
// (rendered.Store: helmrelease/<ns>/<name>/<digest>.yaml, revision the
// chart version — with the OCI digest for an OCIRepository or
// ExternalArtifact, chartRevision — metadata chart name, that version,
// config digest, inputs digest and the OCI digest when there is one, the newest
// --artifact-retention-records files kept). Sets Rendered=False
// (ArtifactFailed) when storing fails, or when an OCIRepository's tag
// names another version than the chart's.
func (r *HelmReleaseReconciler) reconcileHelmStore(ctx context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	res := st.result
	version, ociDigest, err := chartRevision(st.kind, st.artifact.Revision, res.ChartVersion)
	if err != nil {
		return plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("chart %s of %s %s: %w", res.ChartName, st.kind, st.chartKey, err))
	}
	md := map[string]string{
		helmv2.ArtifactChartNameKey:     res.ChartName,
		helmv2.ArtifactChartVersionKey:  version,
		helmv2.ArtifactConfigDigestKey:  res.ConfigDigest,
		helmv2.ArtifactInputsDigestKey:  st.inputs,
		helmv2.ArtifactReleaseActionKey: releaseAction(st.installing),
	}
	if ociDigest != "" {
		// sync-controller, which never sees the source, records it.
		md[helmv2.ArtifactOCIDigestKey] = ociDigest
	}
	a, isNew, err := r.store.Store(ctx, client.ObjectKeyFromObject(obj), obj.Status.RenderedArtifact, rendered.Render{
		Manifests: res.Manifests, Digest: res.Digest, Revision: version,
		Metadata: md, Keep: releaseDigests(obj),
	})
	if err != nil {
		return err
	}
	if a, err = r.storeReleaseRecord(ctx, obj, a, res); err != nil {
		return err
	}
	obj.Status.RenderedArtifact = a
	st.news.stored = isNew
	return nil
}

// reconcileHelmAnnounce sets Rendered=True with the object count, chart
// and version, and records a Rendered event for a new artifact, or for the
// same one again after a failure (rendered.Announce).
func (r *HelmReleaseReconciler) reconcileHelmAnnounce(_ context.Context, obj *helmv2.HelmRelease, st *helmState) error {
	a := obj.Status.RenderedArtifact
	n := st.result.Objects
	r.store.Announce(obj, a, fmt.Sprintf("rendered %d objects from chart %s version %q", n, st.result.ChartName, a.Revision),
		st.news.any(), renderedEvent(a, fmt.Sprint(n)))
	return nil
}

// renderedEvent is the metadata a HelmRelease's Rendered event adds to
// the artifact's digest and url: its config digest, and its object count
// when known.
func renderedEvent(a *meta.Artifact, objects string) map[string]string {
	md := map[string]string{helmv2.ArtifactConfigDigestKey: a.Metadata[helmv2.ArtifactConfigDigestKey]}
	if objects != "" {
		md["objects"] = objects
	}
	return md
}

// helmOwnedStatus is the part of a HelmRelease's status this controller
// owns: status.renderedArtifact, status.helmChart and the Rendered
// condition.
func helmOwnedStatus(obj *helmv2.HelmRelease) any {
	return &helmv2.HelmReleaseStatus{
		RenderedArtifact: obj.Status.RenderedArtifact, HelmChart: obj.Status.HelmChart, Conditions: ownedConditions(obj),
	}
}

// forget drops what is kept for a deleted object: the digest of its
// HelmChart, and what renderKind.forget drops.
func (r *HelmReleaseReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.charts, key)
	r.mu.Unlock()
	r.renderKind.forget(key)
}

// helmChartKey names the HelmChart a HelmRelease renders.
func helmChartKey(obj *helmv2.HelmRelease) types.NamespacedName {
	name := obj.GetHelmChartName()
	if obj.Spec.ChartRef != nil {
		name = obj.Spec.ChartRef.Name
	}
	return types.NamespacedName{Namespace: obj.GetHelmChartNamespace(), Name: name}
}

// parseKey reads "<namespace>/<name>".
func parseKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// helmLimits are HelmLimits with the render limits and the defaults in
// its zero fields.
func (r *HelmReleaseReconciler) helmLimits() helmrender.Limits {
	l := r.HelmLimits
	set := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.MaxOutputBytes, r.RenderLimits.MaxOutputBytes)
	set(&l.MaxNodes, r.RenderLimits.MaxNodes)
	set(&l.MaxDocuments, r.RenderLimits.MaxDocuments)
	set(&l.MaxArchiveBytes, helmrender.DefaultMaxArchiveBytes)
	set(&l.MaxDecompressedBytes, helmrender.DefaultMaxDecompressedBytes)
	set(&l.MaxValuesBytes, helmrender.DefaultMaxValuesBytes)
	set(&l.MaxOutputBytes, helmrender.DefaultMaxOutputBytes)
	set(&l.MaxNodes, helmrender.DefaultMaxNodes)
	set(&l.MaxDocuments, helmrender.DefaultMaxDocuments)
	return l
}
