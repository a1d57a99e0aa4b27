package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/image-controller/internal/registry"
	"plumb.dev/pkg/events"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// latestTagsCount is how many tags status.lastScanResult.latestTags shows
// (Flux's ten).
const latestTagsCount = 10

// ImageRepositoryReconciler scans an ImageRepository's tags into Tags and
// its status.
type ImageRepositoryReconciler struct {
	client.Client
	// Reader reads Secrets, which the manager does not cache.
	Reader     client.Reader
	Events     *events.Recorder
	Metrics    *Metrics
	Connection Connection
	Tags       *Tags

	sk *plumbreconcile.Controller[*imagev1.ImageRepository]
}

// repoState is what one reconcile's steps hand to each other.
type repoState struct {
	exclusions []*regexp.Regexp
	client     *registry.Client
}

// SetupWithManager registers the reconciler: on creation, spec change,
// requestedAt (plumb reconcile, a registry webhook's Receiver), and every
// spec.interval (with jitter).
func (r *ImageRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = skeleton(r.Client, r.Events, r.Metrics.repositories(), imagev1.ReadOperationFailedReason, scanMessage)
	return ctrl.NewControllerManagedBy(mgr).
		Named("imagerepository").
		For(&imagev1.ImageRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile runs the steps suspend, image, exclusions, credentials and
// scan (pkg/reconcile summarizes, writes status and requeues). A deleted
// repository's tags and series are dropped; it has no finalizer, as
// nothing outside this process holds what it made.
func (r *ImageRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &imagev1.ImageRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Tags.Forget(req.NamespacedName)
			r.Metrics.repositories().Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	st := &repoState{}
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("suspend", r.reconcileSuspend, obj, st),
		plumbreconcile.Bind("image", r.reconcileImage, obj, st),
		plumbreconcile.Bind("exclusions", r.reconcileExclusions, obj, st),
		plumbreconcile.Bind("credentials", r.reconcileCredentials, obj, st),
		plumbreconcile.Bind("scan", r.reconcileScan, obj, st),
	)
}

// reconcileSuspend stops at a suspended repository: Ready=False
// (Suspended); the tags of its last scan stay for its policies.
func (r *ImageRepositoryReconciler) reconcileSuspend(_ context.Context, obj *imagev1.ImageRepository, _ *repoState) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}

// reconcileImage parses spec.image and records
// status.canonicalImageName. Stalled, Ready=False (ImageURLInvalid) when
// it is not a repository's name.
func (r *ImageRepositoryReconciler) reconcileImage(_ context.Context, obj *imagev1.ImageRepository, _ *repoState) error {
	repo, err := registry.ParseImage(obj.Spec.Image, obj.Spec.Insecure)
	if err != nil {
		return plumbreconcile.Stalled(imagev1.ImageURLInvalidReason, err)
	}
	obj.Status.CanonicalImageName = repo.Name()
	return nil
}

// reconcileExclusions compiles spec.exclusionList (or its default).
// Stalled, Ready=False (InvalidSpec) naming the expression that does not
// compile.
func (r *ImageRepositoryReconciler) reconcileExclusions(_ context.Context, obj *imagev1.ImageRepository, st *repoState) error {
	for i, e := range obj.GetExclusionList() {
		re, err := regexp.Compile(e)
		if err != nil {
			return plumbreconcile.Stalled(meta.InvalidSpecReason, fmt.Errorf("spec.exclusionList[%d] %q: %v", i, e, err))
		}
		st.exclusions = append(st.exclusions, re)
	}
	return nil
}

// reconcileCredentials reads spec.secretRef and spec.certSecretRef.
// Ready=False (AuthenticationFailed), retried, when one is missing or
// unusable.
func (r *ImageRepositoryReconciler) reconcileCredentials(ctx context.Context, obj *imagev1.ImageRepository, st *repoState) error {
	c, err := r.Connection.client(ctx, r.Reader, obj)
	if err != nil {
		return registryFailure(err, obj.Spec.Interval.Duration)
	}
	st.client = c
	return nil
}

// reconcileScan lists the tags within spec.timeout, drops those the
// exclusion list matches, and records the rest in Tags and a summary in
// status.lastScanResult (with observedExclusionList). Ready=False on
// failure: AuthenticationFailed (the registry refused the credentials),
// TagLimitExceeded (stalled, polled every interval: more tags or pages
// than --max-tags or --max-tag-pages), InvalidSpec (stalled) or
// ReadOperationFailed (retried: network, timeout, an answer over
// --max-response-size, an address the policy refuses). The last scan's
// tags and status stay on failure.
func (r *ImageRepositoryReconciler) reconcileScan(ctx context.Context, obj *imagev1.ImageRepository, st *repoState) error {
	ctx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	r.Metrics.repositories().Worked(obj.Namespace, obj.Name)
	all, err := st.client.Tags(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (spec.timeout %s)", err, obj.GetTimeout())
		}
		return registryFailure(err, obj.Spec.Interval.Duration)
	}
	tags := make([]string, 0, len(all))
	for _, t := range all {
		if !slices.ContainsFunc(st.exclusions, func(re *regexp.Regexp) bool { return re.MatchString(t) }) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	tags = slices.Compact(tags)
	revision := tagsRevision(tags)
	r.Tags.Set(client.ObjectKeyFromObject(obj), Scan{Image: obj.Spec.Image, Revision: revision, Tags: tags})

	latest := slices.Clone(tags)
	slices.Reverse(latest)
	latest = latest[:min(len(latest), latestTagsCount)]
	if len(latest) == 0 {
		latest = nil
	}
	obj.Status.LastScanResult = &imagev1.ScanResult{Revision: revision, TagCount: len(tags), ScanTime: metav1.Now(), LatestTags: latest}
	obj.Status.ObservedExclusionList = slices.Clone(obj.GetExclusionList())
	return nil
}

// tagsRevision is the digest of the sorted tags, one a line.
func tagsRevision(sorted []string) string {
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func scanMessage(obj *imagev1.ImageRepository) string {
	s := obj.Status.LastScanResult
	return fmt.Sprintf("successful scan: found %d tags with checksum %s", s.TagCount, s.Revision)
}
