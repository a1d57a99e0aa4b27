package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fluxcd/pkg/runtime/conditions"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/gitauth"
	"plumb.dev/pkg/gitreach"
	"plumb.dev/pkg/imageupdate"
	"plumb.dev/pkg/message"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/request"
)

// sourceRefIndex indexes ImageUpdateAutomations by the namespace/name of
// their GitRepository.
const sourceRefIndex = ".spec.sourceRef"

// fluxSourceAPIVersion is Flux's GitRepository API, which a ported
// sourceRef may name.
const fluxSourceAPIVersion = "source.toolkit.fluxcd.io/v1"

// The Secret keys of git.commit.signingKey (Flux's): git.asc and
// passphrase for type gpg, identity and password for type ssh (a
// GitRepository's SSH Secret's).
const (
	signingKeyKey = "git.asc"
	passphraseKey = "passphrase"
	identityKey   = "identity"
	passwordKey   = "password"
)

// ImageUpdateAutomationReconciler writes the latest images of the
// selected ImagePolicies into a GitRepository, commits and pushes them
// (plumb.dev/pkg/imageupdate).
type ImageUpdateAutomationReconciler struct {
	client.Client
	// Reader reads Secrets uncached.
	Reader  client.Reader
	Events  *events.Recorder
	Metrics *Metrics
	// Connection.Addresses fences every Git connection as
	// source-controller's fetches are (plumb.dev/pkg/gitreach).
	Connection Connection
	// NoCrossNamespaceRefs refuses a GitRepository in another namespace.
	NoCrossNamespaceRefs bool
	// RequeueDependency is how soon an automation waiting for its
	// GitRepository is looked at again; zero is 10s.
	RequeueDependency time.Duration

	sk *plumbreconcile.Controller[*imagev1.ImageUpdateAutomation]
}

// automationState is what one reconcile's steps hand to each other.
type automationState struct {
	repo     *sourcev1.GitRepository
	remote   imageupdate.Remote
	checkout imageupdate.Ref
	tmp      string
	policies map[string]imageupdate.ImageRef
	observed map[string]imagev1.ImageRef
}

// SetupWithManager registers the reconciler: on creation, spec change and
// requestedAt; when a selected ImagePolicy's latest image changes, so a
// new tag becomes a commit at once; and when its GitRepository's spec or
// revision changes.
func (r *ImageUpdateAutomationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = skeleton(r.Client, r.Events, r.Metrics.automations(), meta.FailedReason, automationMessage)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &imagev1.ImageUpdateAutomation{}, sourceRefIndex,
		func(o client.Object) []string {
			return []string{gitRepoKey(o.(*imagev1.ImageUpdateAutomation)).String()}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("imageupdateautomation").
		For(&imagev1.ImageUpdateAutomation{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		Watches(&imagev1.ImagePolicy{}, handler.EnqueueRequestsFromMapFunc(r.automationsSelecting),
			builder.WithPredicates(latestRefChanged{})).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.automationsOf),
			builder.WithPredicates(revisionChanged{})).
		WithOptions(opts).
		Complete(r)
}

func gitRepoKey(a *imagev1.ImageUpdateAutomation) client.ObjectKey {
	ns := a.Spec.SourceRef.Namespace
	if ns == "" {
		ns = a.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: a.Spec.SourceRef.Name}
}

// latestRefChanged passes a policy's creation, deletion, and an update
// that changes its latest image or its labels (what a selector reads).
type latestRefChanged struct{ predicate.Funcs }

func (latestRefChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*imagev1.ImagePolicy)
	n, ok2 := e.ObjectNew.(*imagev1.ImagePolicy)
	if !ok1 || !ok2 {
		return false
	}
	return !equality.Semantic.DeepEqual(o.Status.LatestRef, n.Status.LatestRef) || !maps.Equal(o.Labels, n.Labels)
}

// revisionChanged passes a GitRepository's creation, deletion, spec
// change and new artifact revision.
type revisionChanged struct{ predicate.Funcs }

func (revisionChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*sourcev1.GitRepository)
	n, ok2 := e.ObjectNew.(*sourcev1.GitRepository)
	if !ok1 || !ok2 {
		return false
	}
	return o.Generation != n.Generation || revision(o) != revision(n)
}

func revision(g *sourcev1.GitRepository) string {
	if g.Status.Artifact == nil {
		return ""
	}
	return g.Status.Artifact.Revision
}

// automationsSelecting maps a policy to the automations of its namespace
// whose policySelector matches it.
func (r *ImageUpdateAutomationReconciler) automationsSelecting(ctx context.Context, o client.Object) []reconcile.Request {
	var list imagev1.ImageUpdateAutomationList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the ImageUpdateAutomations of an ImagePolicy")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		sel, err := selector(&list.Items[i])
		if err == nil && sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// automationsOf maps a GitRepository to the automations that name it.
func (r *ImageUpdateAutomationReconciler) automationsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list imagev1.ImageUpdateAutomationList
	if err := r.List(ctx, &list, client.MatchingFields{sourceRefIndex: client.ObjectKeyFromObject(o).String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the ImageUpdateAutomations of a GitRepository")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

func selector(a *imagev1.ImageUpdateAutomation) (labels.Selector, error) {
	if a.Spec.PolicySelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(a.Spec.PolicySelector)
}

// Reconcile runs the steps suspend, source, policies and update
// (pkg/reconcile summarizes, writes status and comes back after
// spec.interval).
func (r *ImageUpdateAutomationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &imagev1.ImageUpdateAutomation{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Metrics.automations().Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	st := &automationState{}
	defer func() {
		if st.tmp != "" {
			_ = os.RemoveAll(st.tmp)
		}
	}()
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("suspend", r.reconcileSuspend, obj, st),
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("policies", r.reconcilePolicies, obj, st),
		plumbreconcile.Bind("update", r.reconcileUpdate, obj, st),
	)
}

// reconcileSuspend stops at a suspended automation: Ready=False
// (Suspended); nothing is cloned or pushed.
func (r *ImageUpdateAutomationReconciler) reconcileSuspend(_ context.Context, obj *imagev1.ImageUpdateAutomation, _ *automationState) error {
	if obj.Spec.Suspend {
		return plumbreconcile.Suspended()
	}
	return nil
}

// reconcileSource reads the GitRepository and its own credentials (its
// secretRef and proxySecretRef: the automation writes with nothing
// else), and the ref to check out. Stalled, Ready=False (AccessDenied)
// for a GitRepository in another namespace under
// --no-cross-namespace-refs; Stalled (InvalidSourceConfiguration) for a
// ref or provider the automation cannot use; Ready=False
// (DependencyNotReady) while the GitRepository is missing;
// AuthenticationFailed while a Secret is missing or unusable.
func (r *ImageUpdateAutomationReconciler) reconcileSource(ctx context.Context, obj *imagev1.ImageUpdateAutomation, st *automationState) error {
	key := gitRepoKey(obj)
	// The CRD's enums admit these only; a ported manifest names Flux's
	// group, which is the same GitRepository under Plumb's.
	switch ref := obj.Spec.SourceRef; {
	case ref.Kind != "" && ref.Kind != sourcev1.GitRepositoryKind,
		ref.APIVersion != "" && ref.APIVersion != sourcev1.GroupVersion.String() && ref.APIVersion != fluxSourceAPIVersion:
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason,
			fmt.Errorf("spec.sourceRef must be a GitRepository of %s, not %s %s", sourcev1.GroupVersion, ref.APIVersion, ref.Kind))
	}
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return plumbreconcile.Stalled(imagev1.AccessDeniedReason,
			fmt.Errorf("cannot access GitRepository %s: cross-namespace references are not allowed (--no-cross-namespace-refs)", key))
	}
	repo := &sourcev1.GitRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return plumbreconcile.Waiting(meta.DependencyNotReadyReason, requeueDependency(r.RequeueDependency),
				fmt.Errorf("GitRepository %s not found", key))
		}
		return err
	}
	if repo.Spec.Provider == "github" {
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason,
			fmt.Errorf("GitRepository %s authenticates as a GitHub App (spec.provider github), which image-controller does not implement: use a token in spec.secretRef", key))
	}
	checkout, err := checkoutRef(obj, repo)
	if err != nil {
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason, err)
	}
	if st.tmp, err = os.MkdirTemp("", "imageupdate-"); err != nil {
		return err
	}
	remote := imageupdate.Remote{URL: repo.Spec.URL}
	if ref := repo.Spec.SecretRef; ref != nil {
		s, err := secret(ctx, r.Reader, repo.Namespace, ref.Name, "the GitRepository's spec.secretRef")
		if err != nil {
			return gitSecretFailure(err)
		}
		creds, err := gitauth.FromSecret(repo.Spec.URL, s.Data, ref.Name, st.tmp)
		if err != nil {
			return gitSecretFailure(err)
		}
		remote.Auth, remote.CABundle = creds.Method, creds.CABundle
	}
	if ref := repo.Spec.ProxySecretRef; ref != nil {
		s, err := secret(ctx, r.Reader, repo.Namespace, ref.Name, "the GitRepository's spec.proxySecretRef")
		if err != nil {
			return gitSecretFailure(err)
		}
		if remote.Proxy, err = gitauth.ProxyFromSecret(repo.Spec.URL, s.Data, ref.Name); err != nil {
			return gitSecretFailure(err)
		}
	}
	st.repo, st.remote, st.checkout = repo, remote, checkout
	return nil
}

// gitSecretFailure is a Secret that is missing (retried: it may be
// created) or that cannot work (stalled).
func gitSecretFailure(err error) error {
	var ge *gitauth.Error
	if errors.As(err, &ge) && ge.Kind == gitauth.Invalid {
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason, err)
	}
	return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, err)
}

// checkoutRef is git.checkout.ref, else the GitRepository's spec.ref by
// its precedence (commit, name, semver, tag, branch; master when unset).
func checkoutRef(obj *imagev1.ImageUpdateAutomation, repo *sourcev1.GitRepository) (imageupdate.Ref, error) {
	if c := obj.Spec.Git.Checkout; c != nil {
		return imageupdate.Ref{Branch: c.Ref.Branch, Tag: c.Ref.Tag, Commit: c.Ref.Commit}, nil
	}
	ref := repo.Spec.Reference
	switch {
	case ref == nil:
		return imageupdate.Ref{Branch: "master"}, nil
	case ref.Commit != "":
		return imageupdate.Ref{Commit: ref.Commit}, nil
	case ref.Name != "" || ref.SemVer != "":
		return imageupdate.Ref{}, fmt.Errorf("GitRepository %s/%s checks out a ref by name or semver, which an automation cannot: set spec.git.checkout.ref", repo.Namespace, repo.Name)
	case ref.Tag != "":
		return imageupdate.Ref{Tag: ref.Tag}, nil
	case ref.Branch != "":
		return imageupdate.Ref{Branch: ref.Branch}, nil
	}
	return imageupdate.Ref{Branch: "master"}, nil
}

// reconcilePolicies selects the ImagePolicies of the automation's
// namespace by spec.policySelector and keeps those with a latest image
// and Ready=True. Stalled (InvalidPolicySelector) for a selector that
// does not parse.
func (r *ImageUpdateAutomationReconciler) reconcilePolicies(ctx context.Context, obj *imagev1.ImageUpdateAutomation, st *automationState) error {
	sel, err := selector(obj)
	if err != nil {
		return plumbreconcile.Stalled(imagev1.InvalidPolicySelectorReason, fmt.Errorf("spec.policySelector: %w", err))
	}
	var list imagev1.ImagePolicyList
	if err := r.List(ctx, &list, client.InNamespace(obj.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return err
	}
	st.policies, st.observed = map[string]imageupdate.ImageRef{}, map[string]imagev1.ImageRef{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.LatestRef == nil || !conditions.IsReady(p) {
			continue
		}
		l := *p.Status.LatestRef
		st.policies[p.Namespace+":"+p.Name] = imageupdate.ImageRef{Name: l.Name, Tag: l.Tag, Digest: l.Digest}
		st.observed[p.Name] = l
	}
	return nil
}

// reconcileUpdate runs the setters under update.path on the checkout,
// commits what changed as git.commit.author (signed with signingKey),
// pushes it without force, and asks source-controller to fetch the
// GitRepository at once. An event (Succeeded) carries the commit, its
// message and the changed images. Every connection goes through the
// address policy. Failures: Stalled (InvalidSourceConfiguration) for a
// spec no retry fixes (template, signing key, branch, refspec), Stalled
// (UpdateFailed) when update.path leaves the repository, UpdateFailed
// for a limit of the walk, GitOperationFailed for a clone, fetch or push
// (an address refused included); retried.
func (r *ImageUpdateAutomationReconciler) reconcileUpdate(ctx context.Context, obj *imagev1.ImageUpdateAutomation, st *automationState) error {
	c := obj.Spec.Git.Commit
	tmpl, err := imageupdate.ParseMessageTemplate(c.MessageTemplate)
	if err != nil {
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason, fmt.Errorf("spec.git.commit.messageTemplate: %w", err))
	}
	signing, err := r.signingKey(ctx, obj)
	if err != nil {
		return err
	}
	if obj.Spec.Update != nil && obj.Spec.Update.Strategy != "" && obj.Spec.Update.Strategy != imagev1.UpdateStrategySetters {
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason, fmt.Errorf("spec.update.strategy %q is not Setters", obj.Spec.Update.Strategy))
	}

	ctx, cancel := context.WithTimeout(ctx, st.repo.GetTimeout().Duration)
	defer cancel()
	// The CA bundle and the proxy go into the fenced transport; go-git
	// given either would build its own, unfenced.
	conn, err := gitreach.Reach(ctx, st.remote.URL, gitreach.Options{
		Method: st.remote.Auth, CABundle: st.remote.CABundle, Proxy: st.remote.Proxy, Addresses: r.Connection.Addresses,
	})
	if err != nil {
		return gitFailure(err)
	}
	defer conn.Done()
	dir, err := os.MkdirTemp(st.tmp, "checkout-")
	if err != nil {
		return err
	}
	o := imageupdate.Options{
		Remote:        imageupdate.Remote{URL: conn.URL, Auth: conn.Auth},
		Checkout:      st.checkout,
		Dir:           dir,
		UpdatePath:    obj.UpdatePath(),
		Policies:      st.policies,
		Author:        imageupdate.Author{Name: c.Author.Name, Email: c.Author.Email},
		SigningKey:    signing.pgp,
		SSHSigningKey: signing.ssh,
		Message:       tmpl,
		Automation:    imageupdate.AutomationObject{Namespace: obj.Namespace, Name: obj.Name},
		Values:        c.MessageTemplateValues,
	}
	if p := obj.Spec.Git.Push; p != nil {
		o.Push = imageupdate.Push{Branch: p.Branch, Refspec: p.Refspec, Options: p.Options}
	}
	out, err := imageupdate.Run(conn.Ctx, o)
	if err != nil {
		return gitFailure(err)
	}

	now := metav1.Now()
	obj.Status.LastAutomationRunTime = &now
	obj.Status.ObservedPolicies = st.observed
	obj.Status.ObservedSourceRevision = revision(st.repo)
	if out.Commit == "" {
		return nil
	}
	obj.Status.LastPushCommit, obj.Status.LastPushTime = out.Commit, &now
	if r.Events != nil {
		pushed := fmt.Sprintf("pushed commit '%s' to branch '%s'", short(out.Commit), out.Branch)
		r.Events.Record(obj, events.SeverityInfo, meta.SucceededReason, pushed+"\n"+out.Message,
			events.WithRevision(out.Branch+"@sha1:"+out.Commit),
			events.WithMetadata(map[string]string{"commit": out.Commit, "branch": out.Branch, "images": changedImages(out.Result)}))
	}
	// source-controller fetches the new commit now rather than at its
	// interval; a failure here is logged, the push stands.
	if _, err := request.Reconcile(ctx, r.Client, st.repo, nil, nil); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "requesting a reconcile of the GitRepository after a push")
	}
	return nil
}

// signingKeys are the keys a commit may be signed with; at most one is
// set.
type signingKeys struct {
	pgp *openpgp.Entity
	ssh ssh.Signer
}

// signingKey reads git.commit.signingKey's Secret by its type: git.asc
// and passphrase for gpg (the default), identity and password for ssh;
// none without a signingKey.
func (r *ImageUpdateAutomationReconciler) signingKey(ctx context.Context, obj *imagev1.ImageUpdateAutomation) (signingKeys, error) {
	sk := obj.Spec.Git.Commit.SigningKey
	if sk == nil {
		return signingKeys{}, nil
	}
	s, err := secret(ctx, r.Reader, obj.Namespace, sk.SecretRef.Name, "spec.git.commit.signingKey.secretRef")
	if err != nil {
		return signingKeys{}, plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, err)
	}
	var keys signingKeys
	switch sk.Type {
	case imagev1.SigningKeyTypeSSH:
		keys.ssh, err = imageupdate.ReadSSHSigningKey(s.Data[identityKey], s.Data[passwordKey])
	case imagev1.SigningKeyTypeGPG, "":
		keys.pgp, err = imageupdate.ReadSigningKey(s.Data[signingKeyKey], s.Data[passphraseKey])
	default:
		// The CRD's enum admits none other.
		err = fmt.Errorf("type %q is neither gpg nor ssh", sk.Type)
	}
	if err != nil {
		return signingKeys{}, plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason,
			fmt.Errorf("spec.git.commit.signingKey: Secret %s/%s: %w", obj.Namespace, sk.SecretRef.Name, err))
	}
	return keys, nil
}

// gitFailure classifies an error of Reach or Run: an unknown SSH host
// key and refused credentials are AuthenticationFailed, as in
// source-controller.
func gitFailure(err error) error {
	msg := errors.New(message.StripUserInfo(err.Error()))
	var ge *gitreach.Error
	refusal := gitreach.RefusalOf(err)
	switch {
	case errors.As(err, &ge) && ge.Kind == gitreach.Auth:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, msg)
	case refusal == gitreach.HostKeyUnknown:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("the SSH host key is not in the known_hosts of the GitRepository's Secret (unknown host or changed key): %w", msg))
	case refusal == gitreach.CredentialsRefused, refusal == gitreach.SSHKeyRefused:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, fmt.Errorf("the credentials were refused: %w", msg))
	case errors.As(err, &ge), errors.Is(err, imageupdate.ErrInvalid):
		return plumbreconcile.Stalled(imagev1.InvalidSourceConfigReason, msg)
	case errors.Is(err, imageupdate.ErrPath):
		return plumbreconcile.Stalled(imagev1.UpdateFailedReason, msg)
	case errors.Is(err, imageupdate.ErrLimit):
		return plumbreconcile.Failed(imagev1.UpdateFailedReason, msg)
	}
	return plumbreconcile.Failed(sourcev1.GitOperationFailedReason, msg)
}

// changedImages lists the new values the commit wrote, sorted and
// without repeats, for the event's metadata.
func changedImages(res imageupdate.Result) string {
	seen := map[string]bool{}
	for _, c := range res.Changes() {
		seen[c.NewValue] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ",")
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// automationMessage is Ready's message after a run: what it pushed, or
// that nothing changed.
func automationMessage(obj *imagev1.ImageUpdateAutomation) string {
	if c := obj.Status.LastPushCommit; c != "" && obj.Status.LastPushTime != nil && obj.Status.LastAutomationRunTime != nil &&
		obj.Status.LastPushTime.Equal(obj.Status.LastAutomationRunTime) {
		return fmt.Sprintf("pushed commit '%s'", short(c))
	}
	return "repository up-to-date"
}
