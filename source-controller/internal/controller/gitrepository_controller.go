package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"net/http"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/githubapp"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/egress"
	"plumb.dev/source-controller/internal/git"
)

const (
	// ControllerName signs events and names the controller.
	ControllerName = kinds.SourceController
	// Finalizer removes an object's artifacts before it goes.
	Finalizer = "source.plumb.dev/finalizer"
)

// FieldManager owns the source kinds' status (server-side apply).
var FieldManager = kinds.FieldManager(kinds.SourceController)

// GitRepositoryReconciler turns GitRepository objects into tar.gz artifacts.
type GitRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// TmpDir holds checkouts while they are packed; "" is os.TempDir().
	TmpDir string
	// MaxRepositorySize bounds the bytes one checkout writes under TmpDir,
	// Git objects and files (--max-repository-size); 0 is
	// git.DefaultMaxSize.
	MaxRepositorySize int64
	// Addresses is where it may connect (--allowed-private-networks;
	// source-controller/internal/egress); the zero policy refuses every
	// loopback and private address.
	Addresses netguard.Policy

	sk *plumbreconcile.Controller[*sourcev1.GitRepository]
	// githubTokens caches the installation tokens of spec.provider github.
	githubTokens githubapp.Tokens
}

// SetupWithManager registers the reconciler. It reconciles on creation,
// on a spec change (generation), on a new value of the requestedAt
// annotation, on a new artifact (or the deletion) of a GitRepository that
// spec.include names, and every spec.interval (with jitter) after that.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sourcev1.GitRepository{}, includeIndexKey, includedNames); err != nil {
		return fmt.Errorf("indexing GitRepositories by include: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitrepository").
		For(&sourcev1.GitRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		Watches(&sourcev1.GitRepository{},
			// The GitRepositories of its namespace that include it.
			handler.EnqueueRequestsFromMapFunc(plumbreconcile.Referrers(r.Client, func() client.ObjectList { return &sourcev1.GitRepositoryList{} },
				includeIndexKey, client.Object.GetName, true)),
			builder.WithPredicates(includedArtifactChanged{})).
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
	// includes are the artifacts of spec.include, in its order.
	includes []*meta.Artifact
}

// skeleton is this controller's use of pkg/reconcile: Ready speaks for
// the result; a failure is retried with controller-runtime's backoff
// (GitRepository has no retryInterval).
func (r *GitRepositoryReconciler) newSkeleton() *plumbreconcile.Controller[*sourcev1.GitRepository] {
	return &plumbreconcile.Controller[*sourcev1.GitRepository]{
		Condition:     meta.ReadyCondition,
		DefaultReason: sourcev1.GitOperationFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourcev1.GitRepository) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded:     storedRevision[*sourcev1.GitRepository],
		Finalizer:     finalizer(r.Client, r.Storage, r.Metrics, gitRepositoryRef),
	}
}

// Reconcile runs, for a live object, the steps storage, include, source, verify
// and artifact (pkg/reconcile summarizes, writes status and requeues).
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj, st := &sourcev1.GitRepository{}, &state{}
	return readAndRun(ctx, r.Client, r.sk, req, obj, &st.tmp,
		plumbreconcile.Bind("storage", r.reconcileStorage, obj, st),
		plumbreconcile.Bind("include", r.reconcileIncludes, obj, st),
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("verify", r.reconcileVerify, obj, st),
		plumbreconcile.Bind("artifact", r.reconcileArtifact, obj, st),
	)
}

// reconcileStorage re-verifies the current artifact against its digest.
// Sets ArtifactInStorage: True when the file is there with its digest,
// False (StorageOperationFailed) when it is missing or was changed, which
// makes the next steps rebuild it; no condition before a first artifact.
func (r *GitRepositoryReconciler) reconcileStorage(_ context.Context, obj *sourcev1.GitRepository, st *state) error {
	st.artifactOK = verifyArtifact(r.Storage, obj, obj.Status.Artifact)
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
	failure := fetchFailure(err, obj.Spec.Interval.Duration)
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, failure.Reason, "%s", err.Error())
	return failure
}

// fetchFailure is what a failed fetch means: its reason, and whether
// retrying can help. An invalid spec stalls; a repository over the size
// limit or an https:// remote redirecting to http:// stalls too, polled
// every interval — a new commit may be small enough, the server may stop
// redirecting, and only polling sees it; anything else is retried.
func fetchFailure(err error, interval time.Duration) *plumbreconcile.Error {
	var proxyErr *proxyError
	if errors.As(err, &proxyErr) {
		return plumbreconcile.Failed(sourcev1.ProxyConfigErrorReason, err)
	}
	switch git.KindOf(err) {
	case git.AuthFailed:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, err)
	case git.NotFound:
		return plumbreconcile.Failed(sourcev1.ReferenceNotFoundReason, err)
	case git.InvalidSpec:
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	case git.TooLarge:
		return plumbreconcile.Stalled(sourcev1.RepositoryTooLargeReason, err).Polling(interval)
	case git.Insecure:
		return plumbreconcile.Stalled(meta.InsecureConnectionsDisallowedReason, err).Polling(interval)
	}
	return plumbreconcile.Failed(sourcev1.GitOperationFailedReason, err)
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
	proxy, err := r.proxy(ctx, obj)
	if err != nil {
		return err
	}
	auth, err := git.AuthFromSecret(obj.Spec.URL, data, secretName, tmp)
	if err != nil {
		return err
	}
	auth.Proxy = proxy
	auth.Addresses = r.Addresses
	if obj.Spec.Provider == sourcev1.GitProviderGitHub {
		tokenCtx, cancel := context.WithTimeout(ctx, timeout)
		err := r.githubAppAuth(tokenCtx, obj, data, secretName, auth)
		cancel()
		if err != nil {
			return err
		}
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
	if st.artifactOK && obj.Status.ObservedGeneration == obj.Generation && obj.Status.Artifact.HasRevision(target.Revision()) &&
		verifiedForGeneration(obj, obj.Spec.Verification != nil) && !contentSpecChanged(obj) && !includesChanged(obj, st.includes) {
		st.upToDate = true
		st.target = target
		return nil
	}
	// A revision refused as too large under this limit is not fetched
	// again: it would bring the same bytes to the same refusal.
	if refused := git.TooLargeError(target, r.MaxRepositorySize); failedWith(obj, sourcev1.RepositoryTooLargeReason, refused) {
		return refused
	}
	checkoutCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st.checkout = filepath.Join(tmp, "checkout")
	r.Metrics.Worked(obj.Namespace, obj.Name)
	st.target, err = git.Checkout(checkoutCtx, obj.Spec.URL, auth, target, st.checkout, git.CheckoutOptions{
		MaxSize:           r.MaxRepositorySize,
		Directories:       obj.Spec.SparseCheckout,
		RecurseSubmodules: obj.Spec.RecurseSubmodules,
	})
	return err
}

// githubAppAuth makes auth send an installation token of the GitHub App
// of spec.secretRef (spec.provider github), over HTTPS only, as in Flux.
func (r *GitRepositoryReconciler) githubAppAuth(ctx context.Context, obj *sourcev1.GitRepository, data map[string][]byte, secretName string, auth *git.Auth) error {
	if !strings.HasPrefix(obj.Spec.URL, "https://") && !strings.HasPrefix(obj.Spec.URL, "http://") {
		return &git.Error{Kind: git.InvalidSpec, Err: errors.New("spec.provider github authenticates http:// and https:// URLs only")}
	}
	if data == nil {
		return &git.Error{Kind: git.AuthFailed, Err: fmt.Errorf("spec.provider github needs spec.secretRef with %s, %s and %s",
			githubapp.AppIDKey, githubapp.InstallationIDKey, githubapp.PrivateKeyKey)}
	}
	app, err := githubapp.FromSecret(data)
	if err != nil {
		return &git.Error{Kind: git.AuthFailed, Err: fmt.Errorf("spec.secretRef: Secret %s: %w", secretName, err)}
	}
	tr := egress.Transport(r.Addresses)
	defer tr.CloseIdleConnections()
	token, err := r.githubTokens.Token(ctx, app, &http.Client{Transport: egress.Excerpts(tr)})
	var refused *githubapp.RefusedError
	switch {
	case errors.As(err, &refused):
		return &git.Error{Kind: git.AuthFailed, Err: err}
	case err != nil:
		return &git.Error{Kind: git.Failed, Err: err}
	}
	auth.Method = &githttp.BasicAuth{Username: githubapp.TokenUsername, Password: token}
	return nil
}

// failedWith reports whether the last fetch of obj failed with reason and
// err's message.
func failedWith(obj *sourcev1.GitRepository, reason string, err error) bool {
	c := conditions.Get(obj, sourcev1.FetchFailedCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && message.Same(c.Message, err.Error())
}

// reconcileArtifact packs the checkout (minus .git, .sourceignore rules and
// spec.ignore) into gitrepository/<ns>/<name>/<commit>.tar.gz, records it in
// status.artifact with the spec it was made with (status.observedIgnore,
// observedSparseCheckout, observedInclude), emits NewArtifact for a new revision, and keeps the
// newest --artifact-retention-records files. Sets ArtifactInStorage: True
// when stored, False (StorageOperationFailed) when storing failed.
func (r *GitRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	ref := gitRepositoryRef(obj)
	if !st.upToDate {
		if err := r.copyIncludes(obj, st); err != nil {
			conditions.MarkTrue(obj, sourcev1.IncludeUnavailableCondition, sourcev1.IncludeFailedReason, "%s", err.Error())
			return err
		}
		a, err := r.Storage.Pack(ctx, ref, st.target.Commit+".tar.gz", st.checkout, artifact.PackOptions{
			Ignore: artifact.NewIgnorer(obj.Spec.Ignore),
		})
		if err != nil {
			conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
				"storing the artifact failed: %v", err)
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
		}
		a.Revision = st.target.Revision()
		prev := obj.Status.Artifact
		obj.Status.Artifact = a
		observeContentSpec(obj, st.includes)
		conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
			"stored artifact for revision %q", a.Revision)
		recordNewArtifact(r.Events, obj, prev, a, st.artifactOK, sameRevision)
	}
	garbageCollect(ctx, r.Storage, ref, obj.Status.Artifact)
	return nil
}

// observeContentSpec records in status the fields of the spec that shaped
// the artifact just stored, as Flux does: they tell a reader which spec
// status.artifact was made with while a newer generation may be refused.
func observeContentSpec(obj *sourcev1.GitRepository, includes []*meta.Artifact) {
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedSparseCheckout = obj.Spec.SparseCheckout
	obj.Status.ObservedRecurseSubmodules = obj.Spec.RecurseSubmodules
	obj.Status.ObservedInclude = obj.Spec.Include
	obj.Status.IncludedArtifacts = includes
}

// contentSpecChanged reports whether the spec that shapes the artifact's
// content differs from the one status.artifact was made with, so that an
// artifact kept through a failed repack is never taken for the new spec's.
func contentSpecChanged(obj *sourcev1.GitRepository) bool {
	return !equality.Semantic.DeepEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) ||
		!slices.Equal(obj.Spec.SparseCheckout, obj.Status.ObservedSparseCheckout) ||
		obj.Spec.RecurseSubmodules != obj.Status.ObservedRecurseSubmodules
}

// proxy reads spec.proxySecretRef; zero options without it.
func (r *GitRepositoryReconciler) proxy(ctx context.Context, obj *sourcev1.GitRepository) (transport.ProxyOptions, error) {
	ref := obj.Spec.ProxySecretRef
	if ref == nil {
		return transport.ProxyOptions{}, nil
	}
	name := obj.Namespace + "/" + ref.Name
	var secret corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return transport.ProxyOptions{}, &proxyError{fmt.Errorf("spec.proxySecretRef: Secret %s not found", name)}
		}
		return transport.ProxyOptions{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	p, err := git.ProxyFromSecret(obj.Spec.URL, secret.Data, name)
	if err != nil {
		return p, &proxyError{err}
	}
	return p, nil
}

// proxyError is a spec.proxySecretRef that cannot be used
// (ProxyConfigError, retried: the Secret may be created or fixed).
type proxyError struct{ err error }

func (e *proxyError) Error() string { return e.err.Error() }
func (e *proxyError) Unwrap() error { return e.err }

// gitRepositoryRef is the storage folder of obj's artifacts.
func gitRepositoryRef(obj *sourcev1.GitRepository) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.GitRepositoryKind, Namespace: obj.Namespace, Name: obj.Name}
}
