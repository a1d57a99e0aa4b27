package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/image-controller/internal/policy"
	"plumb.dev/pkg/events"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// imageRepositoryRefIndex indexes ImagePolicies by the namespace/name of
// their ImageRepository.
const imageRepositoryRefIndex = ".spec.imageRepositoryRef"

// ImagePolicyReconciler chooses an ImagePolicy's latest image from its
// ImageRepository's last scan.
type ImagePolicyReconciler struct {
	client.Client
	// Reader reads the repository's Secrets (for the digest).
	Reader     client.Reader
	Events     *events.Recorder
	Metrics    *Metrics
	Connection Connection
	Tags       *Tags
	// NoCrossNamespaceRefs refuses a repository in another namespace.
	NoCrossNamespaceRefs bool
	// RequeueDependency is how soon a policy waiting for its repository
	// is looked at again; zero is 10s.
	RequeueDependency time.Duration

	sk *plumbreconcile.Controller[*imagev1.ImagePolicy]
}

// policyState is what one reconcile's steps hand to each other.
type policyState struct {
	repo   *imagev1.ImageRepository
	scan   Scan
	policy *policy.Policy
	tag    string
}

// SetupWithManager registers the reconciler: on creation, spec change,
// requestedAt, and every change of its ImageRepository (a new scan).
func (r *ImagePolicyReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = skeleton(r.Client, r.Events, r.Metrics.policies(), meta.FailedReason, policyMessage)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &imagev1.ImagePolicy{}, imageRepositoryRefIndex,
		func(o client.Object) []string { return []string{repoKey(o.(*imagev1.ImagePolicy)).String()} }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("imagepolicy").
		For(&imagev1.ImagePolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		Watches(&imagev1.ImageRepository{}, handler.EnqueueRequestsFromMapFunc(r.policiesOf)).
		WithOptions(opts).
		Complete(r)
}

func repoKey(p *imagev1.ImagePolicy) client.ObjectKey {
	ns := p.Spec.ImageRepositoryRef.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: p.Spec.ImageRepositoryRef.Name}
}

// policiesOf maps a repository to the policies that name it.
func (r *ImagePolicyReconciler) policiesOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list imagev1.ImagePolicyList
	if err := r.List(ctx, &list, client.MatchingFields{imageRepositoryRefIndex: client.ObjectKeyFromObject(o).String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the ImagePolicies of an ImageRepository")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// Reconcile runs the steps suspend, repository, policy, latest and digest
// (pkg/reconcile summarizes, writes status and requeues). With
// digestReflectionPolicy Always, a success comes back after the digest
// interval; otherwise the repository's next scan brings the policy back.
func (r *ImagePolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &imagev1.ImagePolicy{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Metrics.policies().Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	st := &policyState{}
	res, err := r.sk.Run(ctx, obj,
		plumbreconcile.Bind("suspend", r.reconcileSuspend, obj, st),
		plumbreconcile.Bind("repository", r.reconcileRepository, obj, st),
		plumbreconcile.Bind("policy", r.reconcilePolicy, obj, st),
		plumbreconcile.Bind("latest", r.reconcileLatest, obj, st),
		plumbreconcile.Bind("digest", r.reconcileDigest, obj, st),
	)
	if d := obj.GetDigestInterval(); err == nil && d > 0 && conditions.IsReady(obj) && (res.RequeueAfter == 0 || res.RequeueAfter > d) {
		res.RequeueAfter = plumbreconcile.Jitter(d)
	}
	return res, err
}

// reconcileSuspend stops at a suspended policy: Ready=False (Suspended);
// its latest image stays.
func (r *ImagePolicyReconciler) reconcileSuspend(_ context.Context, obj *imagev1.ImagePolicy, _ *policyState) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}

// reconcileRepository reads the ImageRepository and its last scan.
// Stalled, Ready=False (AccessDenied) for a repository in another
// namespace under --no-cross-namespace-refs; Ready=False
// (DependencyNotReady), looked at again after --requeue-dependency, while
// the repository is missing or has no scan in this process yet.
func (r *ImagePolicyReconciler) reconcileRepository(ctx context.Context, obj *imagev1.ImagePolicy, st *policyState) error {
	key := repoKey(obj)
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return plumbreconcile.Stalled(imagev1.AccessDeniedReason,
			fmt.Errorf("cannot access ImageRepository %s: cross-namespace references are not allowed (--no-cross-namespace-refs)", key))
	}
	repo := &imagev1.ImageRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return plumbreconcile.Waiting(meta.DependencyNotReadyReason, requeueDependency(r.RequeueDependency),
				fmt.Errorf("ImageRepository %s not found", key))
		}
		return err
	}
	scan, ok := r.Tags.Get(key)
	if !ok || scan.Image != repo.Spec.Image {
		return plumbreconcile.Waiting(meta.DependencyNotReadyReason, requeueDependency(r.RequeueDependency),
			fmt.Errorf("ImageRepository %s has no scan of %s yet", key, repo.Spec.Image))
	}
	st.repo, st.scan = repo, scan
	return nil
}

// reconcilePolicy compiles spec.policy and spec.filterTags. Stalled,
// Ready=False (InvalidPolicy) naming what cannot be used.
func (r *ImagePolicyReconciler) reconcilePolicy(_ context.Context, obj *imagev1.ImagePolicy, st *policyState) error {
	p, err := policy.Compile(obj.Spec)
	if err != nil {
		return plumbreconcile.Stalled(imagev1.InvalidPolicyReason, err)
	}
	st.policy = p
	return nil
}

// reconcileLatest chooses the latest tag among the scan's. Ready=False
// (NoMatchingTag) when none passes, until the next scan brings the policy
// back (a watch, not a retry: the tags have not changed); Ready=False
// (InvalidPolicy), stalled, when a numerical policy meets a tag that is no
// number.
func (r *ImagePolicyReconciler) reconcileLatest(_ context.Context, obj *imagev1.ImagePolicy, st *policyState) error {
	tag, err := st.policy.Latest(st.scan.Tags)
	switch {
	case errors.Is(err, policy.ErrNoMatch):
		return plumbreconcile.Waiting(imagev1.NoMatchingTagReason, st.repo.Spec.Interval.Duration,
			fmt.Errorf("%v in ImageRepository %s", err, st.repo.Name))
	case err != nil:
		return plumbreconcile.Stalled(imagev1.InvalidPolicyReason, err)
	}
	st.tag = tag
	return nil
}

// reconcileDigest sets status.latestRef per digestReflectionPolicy: with
// Never no digest; with IfNotPresent the one recorded for the same image
// and tag, else read from the registry; with Always read every time.
// observedPreviousRef takes the ref it replaces, and an info event tells
// the change. Ready=False on a failed read, with the registry's reasons
// (AuthenticationFailed, ReadOperationFailed), retried; the previous
// latestRef stays.
func (r *ImagePolicyReconciler) reconcileDigest(ctx context.Context, obj *imagev1.ImagePolicy, st *policyState) error {
	ref := &imagev1.ImageRef{Name: st.repo.Spec.Image, Tag: st.tag}
	prev := obj.Status.LatestRef
	fetch := false
	switch obj.GetDigestReflectionPolicy() {
	case imagev1.ReflectIfNotPresent:
		if prev != nil && prev.Name == ref.Name && prev.Tag == ref.Tag && prev.Digest != "" {
			ref.Digest = prev.Digest
		} else {
			fetch = true
		}
	case imagev1.ReflectAlways:
		fetch = true
	}
	if fetch {
		c, err := r.Connection.client(ctx, r.Reader, st.repo)
		if err != nil {
			return registryFailure(err, st.repo.Spec.Interval.Duration)
		}
		ctx, cancel := context.WithTimeout(ctx, st.repo.GetTimeout())
		defer cancel()
		if ref.Digest, err = c.Digest(ctx, st.tag); err != nil {
			return registryFailure(err, st.repo.Spec.Interval.Duration)
		}
	}
	if prev == nil || *prev != *ref {
		obj.Status.ObservedPreviousRef = prev
		obj.Status.LatestRef = ref
		if r.Events != nil {
			r.Events.Record(obj, events.SeverityInfo, meta.SucceededReason, policyMessage(obj))
		}
	}
	return nil
}

// policyMessage is Ready's message: the latest image, and the one it
// replaced.
func policyMessage(obj *imagev1.ImagePolicy) string {
	l := obj.Status.LatestRef
	if l == nil {
		return "no image chosen yet"
	}
	msg := fmt.Sprintf("latest image tag for %s resolved to %s", l.Name, l.Tag)
	if p := obj.Status.ObservedPreviousRef; p != nil && p.Tag != l.Tag {
		msg = fmt.Sprintf("latest image tag for %s updated from %s to %s", l.Name, p.Tag, l.Tag)
	}
	if l.Digest != "" {
		msg += " with digest " + l.Digest
	}
	return msg
}
