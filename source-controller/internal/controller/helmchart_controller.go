package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	repo "helm.sh/helm/v4/pkg/repo/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/source-controller/internal/helm"
)

// DefaultMaxChartSize is the default of --helm-chart-max-size, Flux's.
const DefaultMaxChartSize int64 = 10 << 20

// DefaultChartBuildTimeout bounds the chart step of one HelmChart
// reconcile: every request has its own timeout, but a chart with many
// dependencies makes many requests.
const DefaultChartBuildTimeout = 10 * time.Minute

// chartSourceIndexKey indexes HelmCharts by "<Kind>/<name>" of their source
// (in their own namespace).
const chartSourceIndexKey = ".spec.sourceRef"

// HelmChartReconciler builds a HelmChart into a packaged, digest-addressed
// .tgz artifact.
type HelmChartReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// MaxChartSize bounds every chart download (--helm-chart-max-size);
	// 0 is DefaultMaxChartSize.
	MaxChartSize int64
	// Addresses is where it may connect (--allowed-private-networks;
	// source-controller/internal/egress); the zero policy refuses every
	// loopback and private address.
	Addresses netguard.Policy
	// TmpDir holds extracted GitRepository artifacts; "" is os.TempDir().
	TmpDir string
	// BuildTimeout bounds resolving, pulling and building one chart with
	// its dependencies; 0 is DefaultChartBuildTimeout.
	BuildTimeout time.Duration
	// Packager loads, completes and packages charts in chart workers,
	// processes with hard limits (--chart-workers, --chart-worker-memory;
	// pkg/renderworker): nothing of a chart's content is parsed in
	// source-controller's own process.
	Packager *renderworker.Pool
	// MaxExtractedSize is the Helm SDK loader's budget for the
	// decompressed files of one chart, and of the dependencies a build
	// adds together (--helm-chart-max-extracted-size); 0 is
	// helmpackage.DefaultMaxExtractedSize.
	MaxExtractedSize int64

	sk *plumbreconcile.Controller[*sourcev1.HelmChart]
}

// SetupWithManager registers the reconciler: HelmCharts on creation, spec
// change and requestedAt, every spec.interval, and every HelmChart whose
// HelmRepository, GitRepository or Bucket got a new artifact (or, for an OCI
// repository, changed readiness).
func (r *HelmChartReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sourcev1.HelmChart{}, chartSourceIndexKey, func(o client.Object) []string {
		hc := o.(*sourcev1.HelmChart)
		return []string{hc.Spec.SourceRef.Kind + "/" + hc.Spec.SourceRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing HelmCharts by source: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("helmchart").
		For(&sourcev1.HelmChart{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		Watches(&sourcev1.HelmRepository{},
			handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.HelmRepositoryKind)),
			builder.WithPredicates(sourceChanged{})).
		Watches(&sourcev1.GitRepository{},
			handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.GitRepositoryKind)),
			builder.WithPredicates(sourceChanged{})).
		Watches(&sourcev1.Bucket{},
			handler.EnqueueRequestsFromMapFunc(r.chartsOf(sourcev1.BucketKind)),
			builder.WithPredicates(sourceChanged{})).
		WithOptions(opts).
		Complete(r)
}

// chartsOf maps a source of kind to the HelmCharts of its namespace that
// use it.
func (r *HelmChartReconciler) chartsOf(kind string) handler.MapFunc {
	return plumbreconcile.Referrers(r.Client, func() client.ObjectList { return &sourcev1.HelmChartList{} },
		chartSourceIndexKey, func(o client.Object) string { return kind + "/" + o.GetName() }, true)
}

// sourceChanged passes source events that may change what is built from
// the source (a chart, a generator's artifacts): a new artifact (digest,
// revision or URL), or a change of Ready (an OCI HelmRepository has no
// artifact).
type sourceChanged struct{ predicate.Funcs }

func (sourceChanged) Create(event.CreateEvent) bool { return true }

func (sourceChanged) Update(e event.UpdateEvent) bool {
	oldA, oldReady := sourceView(e.ObjectOld)
	newA, newReady := sourceView(e.ObjectNew)
	if oldReady != newReady {
		return true
	}
	if newA == nil {
		return false
	}
	return oldA == nil || oldA.Digest != newA.Digest || oldA.Revision != newA.Revision || oldA.URL != newA.URL
}

func (sourceChanged) Delete(event.DeleteEvent) bool   { return false }
func (sourceChanged) Generic(event.GenericEvent) bool { return false }

func sourceView(o client.Object) (*meta.Artifact, string) {
	var a *meta.Artifact
	if h, ok := o.(meta.ArtifactHolder); ok {
		a = h.GetArtifact()
	}
	if g, ok := o.(conditions.Getter); ok {
		return a, readyStatus(g)
	}
	return a, ""
}

func readyStatus(obj conditions.Getter) string {
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		return string(c.Status)
	}
	return ""
}

// treeSource is a source whose artifact is a tar.gz of files, one folder
// of which is the chart: a GitRepository or a Bucket.
type treeSource interface {
	client.Object
	GetArtifact() *meta.Artifact
	GetTimeout() metav1.Duration
}

// chartState is what one reconcile's steps hand to each other.
type chartState struct {
	artifactOK bool
	// upToDate: the stored artifact is the chart this reconcile resolved.
	upToDate bool

	repo *sourcev1.HelmRepository
	// tree is a GitRepository or Bucket: a tar.gz artifact holding the
	// chart's folder.
	tree treeSource
	// sourceRevision is the source artifact's revision ("" for OCI).
	sourceRevision string
	// root is the extracted artifact of tree.
	root string
	tmp  string

	// plan is the chart worker's plan: the chart's name and version, the
	// remote dependencies to pull.
	plan    *helmpackage.Plan
	archive []byte // the chart archive, for a HelmRepository source
	dir     string // the chart's folder under root, for a tree source
	version string // the artifact's revision
	// name and tgz are the packaged chart's, valuesFiles the values
	// files merged into it.
	name        string
	tgz         []byte
	valuesFiles []string

	// indexes are the repository indexes parsed in this reconcile, by
	// artifact digest: each is parsed once however many dependencies it
	// serves (a parse costs tens of times the index's size).
	indexes map[string]*repo.IndexFile
}

// index returns the parsed index of the stored artifact a, parsing it the
// first time this reconcile asks.
func (st *chartState) index(s *artifact.Storage, a *meta.Artifact) (*repo.IndexFile, error) {
	if idx, ok := st.indexes[a.Digest]; ok {
		return idx, nil
	}
	idx, err := helm.LoadIndex(s.LocalPath(a.Path))
	if err != nil {
		return nil, err
	}
	if st.indexes == nil {
		st.indexes = map[string]*repo.IndexFile{}
	}
	st.indexes[a.Digest] = idx
	return idx, nil
}

func (r *HelmChartReconciler) newSkeleton() *plumbreconcile.Controller[*sourcev1.HelmChart] {
	return &plumbreconcile.Controller[*sourcev1.HelmChart]{
		Condition:     meta.ReadyCondition,
		DefaultReason: sourcev1.ChartPullFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourcev1.HelmChart) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded: func(obj *sourcev1.HelmChart) string {
			return fmt.Sprintf("packaged chart %s version %s", obj.Status.ObservedChartName, obj.Status.Artifact.Revision)
		},
		Keeping: func(obj *sourcev1.HelmChart) string {
			if obj.Status.Artifact == nil {
				return ""
			}
			return fmt.Sprintf("serving the last good chart, version %s", obj.Status.Artifact.Revision)
		},
		Finalizer: finalizer(r.Client, r.Storage, r.Metrics, helmChartRef),
	}
}

// Reconcile runs, for a live object, the steps storage, source, chart and
// artifact.
func (r *HelmChartReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmChart{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := r.sk.Start(ctx, obj); !ok {
		return ctrl.Result{}, err
	}
	st := &chartState{}
	defer func() {
		if st.tmp != "" {
			_ = os.RemoveAll(st.tmp)
		}
	}()
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("storage", r.reconcileStorage, obj, st),
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("chart", r.reconcileChart, obj, st),
		plumbreconcile.Bind("artifact", r.reconcileArtifact, obj, st),
	)
}

// reconcileStorage re-verifies the stored chart (ArtifactInStorage); a
// missing or changed one is built again.
func (r *HelmChartReconciler) reconcileStorage(_ context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	st.artifactOK = verifyArtifact(r.Storage, obj, obj.Status.Artifact)
	return nil
}

// reconcileSource reads the source: a HelmRepository (an HTTP one needs a
// stored index, the last good one serves while a newer index is broken;
// an OCI one needs Ready=True) or a GitRepository, whose artifact is
// verified and extracted from source-controller's own storage with
// pkg/artifact's bounded extraction. A source that is missing or not ready
// yet is a wait (Ready=False, DependencyNotReady, no event): its watch
// brings the HelmChart back. When the stored chart was built for this
// generation from the same index or commit, nothing more is read (the
// same input resolves to the same chart). An invalid spec.version, or a
// spec.sourceRef.apiVersion other than source.plumb.dev/v1, stalls.
func (r *HelmChartReconciler) reconcileSource(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	if v := obj.Spec.Version; v != "" && v != "*" {
		if _, err := semver.NewConstraint(v); err != nil {
			err = fmt.Errorf("spec.version %q is not a semver range: %w", v, err)
			conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, meta.InvalidSpecReason, "%s", err.Error())
			return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
		}
	}
	ref := obj.Spec.SourceRef
	if ref.APIVersion != "" && ref.APIVersion != sourcev1.GroupVersion.String() {
		err := fmt.Errorf("spec.sourceRef.apiVersion %q is not %s", ref.APIVersion, sourcev1.GroupVersion.String())
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, meta.InvalidSpecReason, "%s", err.Error())
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
	wait := func(format string, a ...any) error {
		return plumbreconcile.Waiting(meta.DependencyNotReadyReason, obj.Spec.Interval.Duration, fmt.Errorf(format, a...))
	}
	if ref.Kind != sourcev1.HelmRepositoryKind {
		if err := verifyUnsupported(obj, "a "+ref.Kind); err != nil {
			return err
		}
	}
	switch ref.Kind {
	case sourcev1.HelmRepositoryKind:
		repo := &sourcev1.HelmRepository{}
		if err := r.Get(ctx, key, repo); err != nil {
			if apierrors.IsNotFound(err) {
				return wait("HelmRepository %s not found", key)
			}
			return err
		}
		st.repo = repo
		if !repo.IsOCI() {
			if err := verifyUnsupported(obj, "an HTTP HelmRepository"); err != nil {
				return err
			}
		}
		if repo.IsOCI() {
			if c := conditions.Get(repo, meta.ReadyCondition); c == nil || c.Status != "True" || c.ObservedGeneration != repo.Generation {
				return wait("HelmRepository %s is not ready", key)
			}
			return nil
		}
		if repo.Status.Artifact == nil {
			return wait("HelmRepository %s has no index yet", key)
		}
		if err := r.Storage.Verify(repo.Status.Artifact); err != nil {
			return wait("the index of HelmRepository %s is not in storage: %v", key, err)
		}
		st.sourceRevision = repo.Status.Artifact.Revision
		st.upToDate = sameSource(obj, st)
	case sourcev1.GitRepositoryKind, sourcev1.BucketKind:
		var src treeSource = &sourcev1.GitRepository{}
		if ref.Kind == sourcev1.BucketKind {
			src = &sourcev1.Bucket{}
		}
		if err := r.Get(ctx, key, src); err != nil {
			if apierrors.IsNotFound(err) {
				return wait("%s %s not found", ref.Kind, key)
			}
			return err
		}
		st.tree = src
		a := src.GetArtifact()
		if a == nil {
			return wait("%s %s has no artifact yet", ref.Kind, key)
		}
		st.sourceRevision = a.Revision
		if st.upToDate = sameSource(obj, st); st.upToDate {
			return nil
		}
		tmp, err := os.MkdirTemp(r.TmpDir, "helmchart-"+obj.Namespace+"-"+obj.Name+"-")
		if err != nil {
			return err
		}
		st.tmp = tmp
		st.root = filepath.Join(tmp, "source")
		if err := artifact.ExtractFile(r.Storage.LocalPath(a.Path), a.Digest, st.root, artifact.Limits{}); err != nil {
			return wait("the artifact of %s %s is not usable: %v", ref.Kind, key, err)
		}
	default:
		err := fmt.Errorf("spec.sourceRef.kind %q is not HelmRepository, GitRepository or Bucket", ref.Kind)
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	return nil
}

// reconcileChart resolves and builds the chart. From an HTTP
// HelmRepository: spec.version resolved against the stored index, the
// archive downloaded from the entry's URL (relative to the repository's)
// with the getter, credentials only to the repository's host unless
// passCredentials, checked against the index digest. From an OCI one:
// the tags listed and the range resolved by the SDK's registry client,
// the chart pulled. From a GitRepository: the chart loaded from spec.chart
// in the artifact (a ChartVersion chart whose version is unchanged is not
// built again). Every download is at most --helm-chart-max-size bytes,
// every request bounded by the HelmRepository's spec.timeout; loading keeps
// to the SDK loader's decompressed-size budget. Then the missing
// dependencies are resolved (file:// inside the same source, or the
// HelmRepository in the namespace serving the URL, with its credentials),
// spec.valuesFiles merged over values.yaml, and the chart packaged
// deterministically. Sets FetchFailed (ChartPullFailed,
// AuthenticationFailed, InsecureConnectionsDisallowed for a plain http://
// request on behalf of an https:// repository) and BuildFailed
// (ChartPackageFailed), each deleted on success.
func (r *HelmChartReconciler) reconcileChart(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	if st.upToDate {
		return nil
	}
	timeout := r.BuildTimeout
	if timeout <= 0 {
		timeout = DefaultChartBuildTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("the chart was not pulled and built within %s", timeout))
	defer cancel()
	if obj.Spec.Verify == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
	}
	if err := r.pull(ctx, obj, st); err != nil {
		reason := sourcev1.ChartPullFailedReason
		var re *plumbreconcile.Error
		var verifyErr *chartVerifyError
		switch {
		case errors.As(err, &verifyErr):
			return verifyErr.err
		case workerLimit(err):
			return buildFailed(obj, meta.LimitExceededReason, err)
		case errors.As(err, &re):
			reason = re.Reason
		case errors.Is(err, helm.ErrInsecure):
			reason = meta.InsecureConnectionsDisallowedReason
			re = plumbreconcile.Stalled(reason, err).Polling(obj.Spec.Interval.Duration)
		case errors.Is(err, errCredentials) || helm.IsUnauthorized(err):
			reason = sourcev1.AuthenticationFailedReason
		}
		msg := message.StripUserInfo(err.Error())
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, reason, "%s", msg)
		if re != nil {
			re.Err = errors.New(msg)
			return re
		}
		return plumbreconcile.Failed(reason, errors.New(msg))
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if st.upToDate {
		return nil
	}
	if err := r.build(ctx, obj, st); err != nil {
		reason := sourcev1.ChartPackageFailedReason
		if workerLimit(err) {
			reason = meta.LimitExceededReason
		}
		return buildFailed(obj, reason, err)
	}
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	return nil
}

// buildFailed marks BuildFailed with reason and returns the step's
// failure: Ready=False, one event, the last artifact kept.
func buildFailed(obj *sourcev1.HelmChart, reason string, err error) error {
	msg := message.StripUserInfo(err.Error())
	conditions.MarkTrue(obj, sourcev1.BuildFailedCondition, reason, "%s", msg)
	return plumbreconcile.Failed(reason, errors.New(msg))
}

// workerLimit reports whether err is a chart worker's failure: it passed
// its memory, time or file-size limit, or died (a *render.Error of reason
// LimitExceeded, pkg/renderworker). The chart's own errors (a missing
// values file, a broken Chart.yaml) come back as BuildFailed.
func workerLimit(err error) bool {
	var re *render.Error
	return errors.As(err, &re) && re.Reason == meta.LimitExceededReason
}

// sameSource reports whether the stored artifact was built, for this
// generation, from the source artifact at hand (an index or a commit: the
// same input resolves to the same chart), so that nothing is read again.
// An OCI repository has no such revision: its tags are listed every time.
func sameSource(obj *sourcev1.HelmChart, st *chartState) bool {
	return st.artifactOK && st.sourceRevision != "" && obj.Status.ObservedSourceArtifactRevision == st.sourceRevision &&
		current(obj, st, obj.Status.Artifact.Revision)
}

// current reports whether the stored artifact is the chart version for
// this generation, so nothing needs pulling or building.
// With spec.verify, SourceVerified must also be True for this generation,
// so that a chart stored before spec.verify, or kept through a refusal,
// is never taken as verified.
func current(obj *sourcev1.HelmChart, st *chartState, version string) bool {
	return st.artifactOK && obj.Status.ObservedGeneration == obj.Generation &&
		obj.Status.Artifact.Revision == version && obj.Status.ObservedChartName != "" &&
		conditions.IsTrue(obj, meta.ReadyCondition) && verifiedForGeneration(obj, obj.Spec.Verify != nil)
}

func (r *HelmChartReconciler) pull(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	maxChart := maxOr(r.MaxChartSize, DefaultMaxChartSize)
	switch {
	case st.tree != nil:
		return r.loadFromTree(ctx, obj, st)
	case st.repo.IsOCI():
		reg, ref, err := r.registry(ctx, st.repo)
		if err != nil {
			return err
		}
		ref += "/" + obj.Spec.Chart
		version, err := reg.Resolve(ctx, ref, obj.Spec.Version)
		if err != nil {
			return err
		}
		st.version = version
		if st.upToDate = current(obj, st, version); st.upToDate {
			return nil
		}
		pull := func() ([]byte, error) { return reg.Pull(ref, version) }
		if obj.Spec.Verify != nil {
			digest, err := r.verifyChart(ctx, obj, st.repo, ref, version)
			if err != nil {
				return err
			}
			pull = func() ([]byte, error) { return reg.PullDigest(ref, digest) }
		}
		tgz, err := pull()
		if err != nil {
			return err
		}
		return r.loadArchive(ctx, obj, st, tgz)
	default:
		index, err := st.index(r.Storage, st.repo.Status.Artifact)
		if err != nil {
			return err
		}
		cv, u, err := helm.ResolveChart(index, st.repo.Spec.URL, obj.Spec.Chart, obj.Spec.Version)
		if err != nil {
			return err
		}
		st.version = cv.Version
		if st.upToDate = current(obj, st, cv.Version); st.upToDate {
			return nil
		}
		creds, err := helmCredentials(ctx, r.Client, st.repo)
		if err != nil {
			return err
		}
		f := helm.Fetcher{RepoURL: st.repo.Spec.URL, Credentials: creds, Timeout: st.repo.GetTimeout().Duration, Addresses: r.Addresses}
		tgz, err := f.Get(u, maxChart)
		if err != nil {
			return fmt.Errorf("downloading chart %s version %s: %w", obj.Spec.Chart, cv.Version, err)
		}
		if err := helm.VerifyChartDigest(cv, tgz); err != nil {
			return err
		}
		return r.loadArchive(ctx, obj, st, tgz)
	}
}

// loadArchive has a chart worker load the archive a repository served
// and check it is spec.chart, and plan its build.
func (r *HelmChartReconciler) loadArchive(ctx context.Context, obj *sourcev1.HelmChart, st *chartState, tgz []byte) error {
	plan, err := r.chartPlan(ctx, st, helmpackage.Source{Archive: tgz, Name: obj.Spec.Chart})
	if err != nil {
		return err
	}
	st.plan, st.archive = plan, tgz
	return nil
}

// loadFromTree has a chart worker load the chart at spec.chart in the
// extracted artifact, and settles its version: spec.version, when a
// range, must match it; the Revision strategy appends the source
// revision (<version>+<short>).
func (r *HelmChartReconciler) loadFromTree(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	dir := filepath.Join(st.root, filepath.FromSlash(strings.TrimPrefix(obj.Spec.Chart, "/")))
	if err := helmpackage.Inside(st.root, dir); err != nil {
		err = fmt.Errorf("spec.chart %q: %w", obj.Spec.Chart, err)
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err).Polling(obj.Spec.Interval.Duration)
	}
	plan, err := r.chartPlan(ctx, st, helmpackage.Source{Root: st.root, Dir: dir})
	if err != nil {
		if workerLimit(err) {
			return err
		}
		return fmt.Errorf("spec.chart %q: %w", obj.Spec.Chart, err)
	}
	version := plan.Version
	if v := obj.Spec.Version; v != "" && v != "*" {
		c, _ := semver.NewConstraint(v)
		sv, err := semver.NewVersion(version)
		if err != nil || !c.Check(sv) {
			return fmt.Errorf("chart %s version %s does not match spec.version %q", plan.Name, version, v)
		}
	}
	if obj.GetReconcileStrategy() == sourcev1.ReconcileStrategyRevision {
		version = withRevision(version, st.sourceRevision)
	}
	st.version, st.plan, st.dir = version, plan, dir
	st.upToDate = current(obj, st, version)
	return nil
}

// chartPlan runs helmpackage.MakePlan in a chart worker.
func (r *HelmChartReconciler) chartPlan(ctx context.Context, st *chartState, src helmpackage.Source) (*helmpackage.Plan, error) {
	ctx, cancel, opts := r.workerRequest(ctx, st)
	defer cancel()
	return r.Packager.ChartPlan(ctx, src, opts)
}

// workerRequest bounds a chart worker's request by the source's
// spec.timeout (HelmRepository, GitRepository or Bucket, 60s when unset), within
// the chart step's own deadline, and names it for messages.
func (r *HelmChartReconciler) workerRequest(ctx context.Context, st *chartState) (context.Context, context.CancelFunc, renderworker.ChartOptions) {
	opts := renderworker.ChartOptions{Limits: helmpackage.Limits{MaxExtractedBytes: r.MaxExtractedSize}}
	var timeout time.Duration
	switch {
	case st.tree != nil:
		timeout = st.tree.GetTimeout().Duration
		k, _ := kinds.Of(st.tree)
		opts.TimeoutName = "spec.timeout of " + k.GVK.Kind + " " + st.tree.GetName()
	case st.repo != nil:
		timeout = st.repo.GetTimeout().Duration
		opts.TimeoutName = "spec.timeout of HelmRepository " + st.repo.Name
	}
	if timeout <= 0 {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, opts
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, opts
}

// withRevision appends the short source revision as semver build
// metadata: 1.2.3+0123456789ab, or 1.2.3+build.0123456789ab.
func withRevision(version, revision string) string {
	short := revision[strings.LastIndex(revision, ":")+1:]
	if len(short) > 12 {
		short = short[:12]
	}
	short = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '-'
	}, short)
	if strings.Contains(version, "+") {
		return version + "." + short
	}
	return version + "+" + short
}

// build pulls the plan's remote dependencies (archives only: resolved,
// downloaded within --helm-chart-max-size each and the extracted-size
// budget together, checked against the index's digest) and has a chart
// worker load everything, merge spec.valuesFiles, set the version and
// package the chart.
func (r *HelmChartReconciler) build(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	remote, err := r.pullDependencies(ctx, obj, st)
	if err != nil {
		return err
	}
	src := helmpackage.Source{Archive: st.archive, Name: obj.Spec.Chart}
	if st.archive == nil {
		src = helmpackage.Source{Root: st.root, Dir: st.dir}
	}
	ctx, cancel, opts := r.workerRequest(ctx, st)
	defer cancel()
	res, err := r.Packager.ChartPackage(ctx, src, helmpackage.Options{
		ValuesFiles:              obj.Spec.ValuesFiles,
		IgnoreMissingValuesFiles: obj.Spec.IgnoreMissingValuesFiles,
		Version:                  st.version,
		Remote:                   remote,
		OutDir:                   r.TmpDir,
	}, opts)
	if err != nil {
		return err
	}
	st.name, st.tgz, st.valuesFiles = res.Name, res.Archive, res.ValuesFiles
	return nil
}

// pullDependencies downloads the archives of the plan's remote
// dependencies, each once. Their bytes together are bounded by the
// extracted-size budget the worker charges their files against (a chart
// archive is smaller than its files), so that what source-controller
// holds for one build stays bounded whatever the count.
func (r *HelmChartReconciler) pullDependencies(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) (map[helmpackage.Dependency][]byte, error) {
	maxChart := maxOr(r.MaxChartSize, DefaultMaxChartSize)
	left := maxOr(r.MaxExtractedSize, helmpackage.DefaultMaxExtractedSize)
	remote := make(map[helmpackage.Dependency][]byte, len(st.plan.Remote))
	for _, dep := range st.plan.Remote {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("chart %s: resolving dependencies: %w", dep.Chart, context.Cause(ctx))
		}
		tgz, err := r.pullDependency(ctx, obj.Namespace, dep, maxChart, st)
		if err != nil {
			return nil, fmt.Errorf("dependency %q of chart %s: %w", dep.Name, dep.Chart, err)
		}
		if left -= int64(len(tgz)); left < 0 {
			return nil, fmt.Errorf("chart %s: %w: the archives of its dependencies pass %d bytes together",
				st.plan.Name, helmpackage.ErrDependencyLimit, maxOr(r.MaxExtractedSize, helmpackage.DefaultMaxExtractedSize))
		}
		remote[dep.Key()] = tgz
	}
	return remote, nil
}

// pullDependency downloads the archive of one remote dependency from the
// HelmRepository of the namespace serving its repository URL.
func (r *HelmChartReconciler) pullDependency(ctx context.Context, namespace string, dep helmpackage.Dependency, maxBytes int64, st *chartState) ([]byte, error) {
	repository, err := r.dependencyRepository(ctx, namespace, dep.Repository, st)
	if err != nil {
		return nil, err
	}
	return repository.Fetch(ctx, dep.Name, dep.Version, maxBytes)
}

// dependencyRepository finds the HelmRepository of the namespace whose
// URL is url (trailing slashes aside) and returns it as a dependency
// source with its credentials.
func (r *HelmChartReconciler) dependencyRepository(ctx context.Context, namespace, url string, st *chartState) (*helm.Repository, error) {
	var list sourcev1.HelmRepositoryList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	want := strings.TrimRight(url, "/")
	for i := range list.Items {
		repo := &list.Items[i]
		if strings.TrimRight(repo.Spec.URL, "/") != want {
			continue
		}
		if repo.IsOCI() {
			reg, ref, err := r.registry(ctx, repo)
			if err != nil {
				return nil, err
			}
			return &helm.Repository{URL: repo.Spec.URL, Registry: reg, Ref: ref}, nil
		}
		a := repo.Status.Artifact
		if a == nil {
			return nil, fmt.Errorf("HelmRepository %s/%s serving %s has no index yet", namespace, repo.Name, url)
		}
		if err := r.Storage.Verify(a); err != nil {
			return nil, fmt.Errorf("the index of HelmRepository %s/%s is not in storage: %w", namespace, repo.Name, err)
		}
		index, err := st.index(r.Storage, a)
		if err != nil {
			return nil, err
		}
		creds, err := helmCredentials(ctx, r.Client, repo)
		if err != nil {
			return nil, err
		}
		f := &helm.Fetcher{RepoURL: repo.Spec.URL, Credentials: creds, Timeout: repo.GetTimeout().Duration, Addresses: r.Addresses}
		return &helm.Repository{URL: repo.Spec.URL, Index: index, Fetcher: f}, nil
	}
	return nil, fmt.Errorf("no HelmRepository in namespace %s serves %s", namespace, url)
}

// registry returns the SDK registry client for an OCI HelmRepository and
// its host/path.
func (r *HelmChartReconciler) registry(ctx context.Context, repo *sourcev1.HelmRepository) (*helm.Registry, string, error) {
	ref, err := helm.OCIRef(repo.Spec.URL)
	if err != nil {
		return nil, "", err
	}
	creds, err := helmCredentials(ctx, r.Client, repo)
	if err != nil {
		return nil, "", err
	}
	host, _, _ := strings.Cut(ref, "/")
	reg, err := helm.NewRegistry(host, creds, repo.Spec.Insecure, repo.GetTimeout().Duration, maxOr(r.MaxChartSize, DefaultMaxChartSize), r.Addresses)
	if err != nil {
		return nil, "", credentialsError{err}
	}
	return reg, ref, nil
}

// reconcileArtifact stores the packaged chart as
// helmchart/<ns>/<name>/<chart>-<version>-<sha256>.tgz (revision: the
// chart version), records the observed chart name, source revision and
// values files, emits NewArtifact when the digest changed, and keeps the
// newest --artifact-retention-records files. The same chart packages to
// the same bytes, so an unchanged chart changes nothing. Sets
// ArtifactInStorage.
func (r *HelmChartReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.HelmChart, st *chartState) error {
	ref := helmChartRef(obj)
	prev := obj.Status.Artifact
	if !st.upToDate {
		digest := helm.Digest(st.tgz)
		if !st.artifactOK || prev.Digest != digest || prev.Revision != st.version {
			name := fmt.Sprintf("%s-%s-%s.tgz", st.name, st.version, strings.TrimPrefix(digest, "sha256:"))
			a, err := r.Storage.Store(ctx, ref, name, bytes.NewReader(st.tgz))
			if err != nil {
				conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
					"storing the artifact failed: %v", err)
				return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
			}
			a.Revision = st.version
			obj.Status.Artifact = a
			recordNewArtifact(r.Events, obj, prev, a, st.artifactOK, sameRevisionAndDigest)
		}
		obj.Status.ObservedChartName = st.name
		// The files merged: spec.valuesFiles less those skipped under
		// ignoreMissingValuesFiles, so a missing one shows.
		obj.Status.ObservedValuesFiles = st.valuesFiles
	}
	obj.Status.ObservedSourceArtifactRevision = st.sourceRevision
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", obj.Status.Artifact.Revision)
	garbageCollect(ctx, r.Storage, ref, obj.Status.Artifact)
	return nil
}

func helmChartRef(obj *sourcev1.HelmChart) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.HelmChartKind, Namespace: obj.Namespace, Name: obj.Name}
}
