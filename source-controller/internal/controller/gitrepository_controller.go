package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/panics"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/git"
)

const (
	// ControllerName signs events and names the controller.
	ControllerName = "source-controller"
	// FieldManager owns GitRepository status (server-side apply).
	FieldManager = "plumb-source"
	// Finalizer removes an object's artifacts before it goes.
	Finalizer = "source.plumb.dev/finalizer"
)

// Event and condition reasons of this controller, besides api/source/v1's.
const (
	// NewArtifactReason: an artifact of a new revision was stored.
	NewArtifactReason = "NewArtifact"
	// FetchFailedReason: fetching from the remote failed.
	FetchFailedReason = "FetchFailed"
	// ProgressingWithRetryReason: Reconciling stays True after a failure
	// that will be retried.
	ProgressingWithRetryReason = "ProgressingWithRetry"
	// ArtifactRebuiltReason: a stored artifact was missing or changed on
	// disk and was built again.
	ArtifactRebuiltReason = "ArtifactRebuilt"
	// RepositoryTooLargeReason: fetching and checking out the revision
	// needs more disk than --max-repository-size.
	RepositoryTooLargeReason = "RepositoryTooLarge"
	// InsecureConnectionsDisallowedReason (Flux's reason): the server
	// redirected an https:// spec.url to plain http://.
	InsecureConnectionsDisallowedReason = "InsecureConnectionsDisallowed"
)

// GitRepositoryReconciler turns GitRepository objects into tar.gz artifacts.
type GitRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *Metrics
	// TmpDir holds checkouts while they are packed; "" is os.TempDir().
	TmpDir string
	// MaxRepositorySize bounds the bytes one checkout writes under TmpDir,
	// Git objects and files (--max-repository-size); 0 is
	// git.DefaultMaxSize.
	MaxRepositorySize int64
}

// SetupWithManager registers the reconciler. It reconciles on creation,
// on a spec change (generation), on a new value of the requestedAt
// annotation, and every spec.interval (with jitter) after that.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitrepository").
		For(&sourcev1.GitRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		WithOptions(opts).
		Complete(r)
}

// state is what one reconcile's steps hand to each other.
type state struct {
	// artifactOK: the artifact in status is in storage with its digest.
	artifactOK bool
	// upToDate: the remote has nothing the artifact lacks; no fetch is done.
	upToDate bool
	target   git.Target
	checkout string
	tmp      string
}

// step is one named stage of a reconcile.
type step struct {
	name string
	run  func(context.Context, *sourcev1.GitRepository, *state) error
}

// runRecovered runs the step; a panic (the steps read a remote repository,
// untrusted input) fails it with a *panics.Error, which the summary reports
// as Ready=False like any other failure, and is logged with its stack.
func (s step) runRecovered(ctx context.Context, obj *sourcev1.GitRepository, st *state) (err error) {
	defer panics.Recover(&err, s.name+" step")
	return s.run(ctx, obj, st)
}

// Reconcile runs, for a live object: storage check, fetch, artifact; then
// it summarises the conditions and server-side-applies the status.
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	log := ctrl.LoggerFrom(ctx)
	obj := &sourcev1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	defer r.Metrics.observe(obj, start)
	if obj.Spec.Suspend {
		log.V(1).Info("suspended, nothing done")
		r.Metrics.record(obj)
		return ctrl.Result{}, nil
	}

	// A new generation is reported as in progress before the slow part, so
	// kstatus readers never take the old Ready for the new spec's. Retries
	// of the same generation keep the condition the last attempt left.
	if rc := conditions.Get(obj, meta.ReconcilingCondition); obj.Status.ObservedGeneration != obj.Generation &&
		(rc == nil || rc.ObservedGeneration != obj.Generation) {
		conditions.MarkReconciling(obj, meta.ProgressingReason, "reconciling generation %d", obj.Generation)
		if err := r.applyStatus(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}

	stored := slices.Clone(obj.Status.Conditions)
	st := &state{}
	defer func() {
		if st.tmp != "" {
			_ = os.RemoveAll(st.tmp)
		}
	}()
	var err error
	for _, s := range []step{
		{"storage", r.reconcileStorage},
		{"source", r.reconcileSource},
		{"artifact", r.reconcileArtifact},
	} {
		if err = s.runRecovered(ctx, obj, st); err != nil {
			log.V(1).Info("step failed", "step", s.name, "error", err.Error())
			break
		}
	}
	result, err := r.summarize(obj, err)
	plumbreconcile.BoundConditions(obj, stored)
	if perr := r.applyStatus(ctx, obj); perr != nil {
		err = errors.Join(err, perr)
	}
	r.Metrics.record(obj)
	return result, err
}

// reconcileStorage re-verifies the current artifact against its digest.
// Sets ArtifactInStorage: True when the file is there with its digest,
// False (StorageOperationFailed) when it is missing or was changed, which
// makes the next steps rebuild it; no condition before a first artifact.
func (r *GitRepositoryReconciler) reconcileStorage(_ context.Context, obj *sourcev1.GitRepository, st *state) error {
	a := obj.Status.Artifact
	if a == nil {
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return nil
	}
	if err := r.Storage.Verify(a); err != nil {
		conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
			"the stored artifact failed verification and is rebuilt: %v", err)
		return nil
	}
	st.artifactOK = true
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", a.Revision)
	return nil
}

// reconcileSource resolves spec.ref against the remote's references
// (ls-remote) and checks the commit out, unless the verified artifact of
// this generation already has that revision. Sets FetchFailed: True with
// the Git error (reason AuthenticationFailed, ReferenceNotFound,
// InvalidSpec, RepositoryTooLarge, InsecureConnectionsDisallowed or
// GitOperationFailed), deleted on success; the message never holds a URL's
// user info. An invalid spec, a repository over --max-repository-size and
// an https:// remote redirecting to http:// are returned as stalled errors:
// retrying the same revision cannot help.
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	err := r.fetch(ctx, obj, st)
	if err == nil {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		return nil
	}
	reason := sourcev1.GitOperationFailedReason
	switch git.KindOf(err) {
	case git.AuthFailed:
		reason = sourcev1.AuthenticationFailedReason
	case git.NotFound:
		reason = sourcev1.ReferenceNotFoundReason
	case git.InvalidSpec:
		reason = meta.InvalidSpecReason
	case git.TooLarge:
		reason = RepositoryTooLargeReason
	case git.Insecure:
		reason = InsecureConnectionsDisallowedReason
	}
	// One event per distinct failure: a fetch retried with backoff would
	// otherwise repeat the same alert many times. The condition read back
	// holds the message cut to message.MaxBytes.
	if prev := conditions.Get(obj, sourcev1.FetchFailedCondition); prev == nil || !message.Same(prev.Message, err.Error()) {
		r.Events.Record(obj, events.SeverityError, FetchFailedReason, err.Error())
	}
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, reason, "%s", err.Error())
	if kind := git.KindOf(err); kind == git.InvalidSpec || kind == git.TooLarge || kind == git.Insecure {
		return plumbreconcile.Stalled(reason, err)
	}
	return &reasonError{reason: reason, err: err}
}

func (r *GitRepositoryReconciler) fetch(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	timeout := obj.GetTimeout().Duration
	var data map[string][]byte
	secretName := ""
	if ref := obj.Spec.SecretRef; ref != nil {
		secretName = obj.Namespace + "/" + ref.Name
		var secret corev1.Secret
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, &secret); err != nil {
			if apierrors.IsNotFound(err) {
				return &git.Error{Kind: git.AuthFailed, Err: fmt.Errorf("spec.secretRef: Secret %s not found", secretName)}
			}
			return fmt.Errorf("reading Secret %s: %w", secretName, err)
		}
		data = secret.Data
		if data == nil {
			data = map[string][]byte{}
		}
	}
	tmp, err := os.MkdirTemp(r.TmpDir, "gitrepository-"+obj.Namespace+"-"+obj.Name+"-")
	if err != nil {
		return err
	}
	st.tmp = tmp
	auth, err := git.AuthFromSecret(obj.Spec.URL, data, secretName, tmp)
	if err != nil {
		return err
	}

	var refs git.Refs
	if ref := obj.Spec.Reference; ref == nil || ref.Commit == "" || ref.Branch != "" {
		listCtx, cancel := context.WithTimeout(ctx, timeout)
		refs, err = git.ListRefs(listCtx, obj.Spec.URL, auth)
		cancel()
		if err != nil {
			return err
		}
	}
	target, err := git.Resolve(obj.Spec.Reference, refs)
	if err != nil {
		return err
	}
	if st.artifactOK && obj.Status.ObservedGeneration == obj.Generation && obj.Status.Artifact.HasRevision(target.Revision()) {
		st.upToDate = true
		st.target = target
		return nil
	}
	// A revision refused as too large under this limit is not fetched
	// again: it would bring the same bytes to the same refusal.
	if refused := git.TooLargeError(target, r.MaxRepositorySize); failedWith(obj, RepositoryTooLargeReason, refused) {
		return refused
	}
	checkoutCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st.checkout = filepath.Join(tmp, "checkout")
	r.Metrics.fetched(obj)
	st.target, err = git.Checkout(checkoutCtx, obj.Spec.URL, auth, target, st.checkout, r.MaxRepositorySize)
	return err
}

// failedWith reports whether the last fetch of obj failed with reason and
// err's message.
func failedWith(obj *sourcev1.GitRepository, reason string, err error) bool {
	c := conditions.Get(obj, sourcev1.FetchFailedCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && message.Same(c.Message, err.Error())
}

// reconcileArtifact packs the checkout (minus .git, .sourceignore rules and
// spec.ignore) into gitrepository/<ns>/<name>/<commit>.tar.gz, records it in
// status.artifact, emits NewArtifact for a new revision, and keeps the
// newest --artifact-retention-records files. Sets ArtifactInStorage: True
// when stored, False (StorageOperationFailed) when storing failed.
func (r *GitRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	ref := storageRef(obj)
	if !st.upToDate {
		a, err := r.Storage.Pack(ctx, ref, st.target.Commit+".tar.gz", st.checkout, artifact.PackOptions{
			Ignore: artifact.NewIgnorer(obj.Spec.Ignore),
		})
		if err != nil {
			conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
				"storing the artifact failed: %v", err)
			r.Events.Record(obj, events.SeverityError, sourcev1.StorageOperationFailedReason, err.Error())
			return &reasonError{reason: sourcev1.StorageOperationFailedReason, err: err}
		}
		a.Revision = st.target.Revision()
		prev := obj.Status.Artifact
		obj.Status.Artifact = a
		conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
			"stored artifact for revision %q", a.Revision)
		md := map[string]string{"digest": a.Digest, "url": a.URL}
		switch {
		case !prev.HasRevision(a.Revision):
			r.Events.Record(obj, events.SeverityInfo, NewArtifactReason,
				fmt.Sprintf("stored artifact for revision %q", a.Revision),
				events.WithRevision(a.Revision), events.WithMetadata(md))
		case !st.artifactOK:
			r.Events.Record(obj, events.SeverityInfo, ArtifactRebuiltReason,
				fmt.Sprintf("rebuilt the artifact of revision %q, which was missing or changed in storage", a.Revision),
				events.WithRevision(a.Revision), events.WithMetadata(md))
		}
	}
	if _, err := r.Storage.GarbageCollect(ctx, ref, obj.Status.Artifact.Path); err != nil {
		// Old files staying around is no reason to fail the reconcile.
		ctrl.LoggerFrom(ctx).Error(err, "garbage-collecting old artifacts")
	}
	return nil
}

// summarize sets Ready, Reconciling and Stalled from the steps' outcome
// (kstatus), observedGeneration when the outcome is final for this
// generation (success or stalled) and lastHandledReconcileAt, and says when
// to come back.
func (r *GitRepositoryReconciler) summarize(obj *sourcev1.GitRepository, err error) (ctrl.Result, error) {
	if v := plumbreconcile.RequestedAt(obj); v != "" {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	var stalled *plumbreconcile.StalledError
	switch {
	case err == nil:
		conditions.Delete(obj, meta.ReconcilingCondition)
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason,
			"stored artifact for revision %q", obj.Status.Artifact.Revision)
		obj.Status.ObservedGeneration = obj.Generation
		return ctrl.Result{RequeueAfter: plumbreconcile.Jitter(obj.Spec.Interval.Duration)}, nil
	case errors.As(err, &stalled):
		conditions.MarkStalled(obj, stalled.Reason, "%s", err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, stalled.Reason, "%s", err.Error())
		obj.Status.ObservedGeneration = obj.Generation
		if kind := git.KindOf(err); kind == git.TooLarge || kind == git.Insecure {
			// A new commit may be small enough, the server may stop
			// redirecting to plain HTTP; only polling sees it.
			return ctrl.Result{RequeueAfter: plumbreconcile.Jitter(obj.Spec.Interval.Duration)}, nil
		}
		// Only a spec change helps; that change triggers a reconcile.
		return ctrl.Result{}, nil
	default:
		reason := sourcev1.GitOperationFailedReason
		var re *reasonError
		if errors.As(err, &re) {
			reason = re.reason
		}
		conditions.Delete(obj, meta.StalledCondition)
		conditions.MarkReconciling(obj, ProgressingWithRetryReason, "retrying after: %s", err.Error())
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err.Error())
		// The error makes controller-runtime retry with backoff.
		return ctrl.Result{}, err
	}
}

// finalize deletes the object's artifact folder and then the finalizer.
func (r *GitRepositoryReconciler) finalize(ctx context.Context, obj *sourcev1.GitRepository) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if err := r.Storage.Remove(storageRef(obj)); err != nil {
		return err
	}
	r.Metrics.forget(obj.Namespace, obj.Name)
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Patch(ctx, obj, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// applyStatus server-side-applies the whole status as FieldManager.
func (r *GitRepositoryReconciler) applyStatus(ctx context.Context, obj *sourcev1.GitRepository) error {
	status, err := plumbreconcile.ToStatusMap(&obj.Status)
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(plumbreconcile.ApplyStatus(ctx, r.Client, obj, FieldManager, status))
}

func storageRef(obj *sourcev1.GitRepository) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.GitRepositoryKind, Namespace: obj.Namespace, Name: obj.Name}
}

// reasonError carries the Ready reason of a retryable failure.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }
