package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/helm"
)

// DefaultMaxIndexSize is the default of --helm-index-max-size: 10 MiB,
// not Flux's 50, because the SDK's parse peaks at about 38 times the
// index's size (measured: 378 MiB of heap for a 10 MiB index, 1.9 GB for
// 50 MiB), which must fit source-controller's 1 GiB.
const DefaultMaxIndexSize int64 = 10 << 20

// HelmRepositoryReconciler stores the verified index.yaml of an HTTP Helm
// repository as an artifact, and checks the settings of an OCI one.
type HelmRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// MaxIndexSize bounds a downloaded index.yaml (--helm-index-max-size);
	// 0 is DefaultMaxIndexSize.
	MaxIndexSize int64
	// Addresses is where it may connect (--allowed-private-networks;
	// source-controller/internal/egress); the zero policy refuses every
	// loopback and private address.
	Addresses netguard.Policy

	sk *plumbreconcile.Controller[*sourcev1.HelmRepository]
}

// SetupWithManager registers the reconciler: on creation, spec change,
// requestedAt, and every spec.interval (with jitter).
func (r *HelmRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	return ctrl.NewControllerManagedBy(mgr).
		Named("helmrepository").
		For(&sourcev1.HelmRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		WithOptions(opts).
		Complete(r)
}

// repoState is what one reconcile's steps hand to each other.
type repoState struct {
	artifactOK bool
	index      []byte
	digest     string
}

func (r *HelmRepositoryReconciler) newSkeleton() *plumbreconcile.Controller[*sourcev1.HelmRepository] {
	return &plumbreconcile.Controller[*sourcev1.HelmRepository]{
		Condition:     meta.ReadyCondition,
		DefaultReason: sourcev1.IndexationFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourcev1.HelmRepository) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded: func(obj *sourcev1.HelmRepository) string {
			if obj.IsOCI() {
				return "the OCI repository settings are valid"
			}
			return fmt.Sprintf("stored artifact for revision %q", obj.Status.Artifact.Revision)
		},
		Keeping: func(obj *sourcev1.HelmRepository) string {
			if obj.Status.Artifact == nil || obj.IsOCI() {
				return ""
			}
			return fmt.Sprintf("serving the last good index, revision %q", obj.Status.Artifact.Revision)
		},
		Finalizer: finalizer(r.Client, r.Storage, r.Metrics, helmRepositoryRef),
	}
}

// Reconcile runs, for a live object, the steps storage, index and
// artifact for an HTTP repository, or oci for an OCI one.
func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := r.sk.Start(ctx, obj); !ok {
		return ctrl.Result{}, err
	}
	if obj.IsOCI() {
		return r.sk.Run(ctx, obj, plumbreconcile.Bind("oci", r.reconcileOCI, obj, &repoState{}))
	}
	st := &repoState{}
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("storage", r.reconcileStorage, obj, st),
		plumbreconcile.Bind("index", r.reconcileIndex, obj, st),
		plumbreconcile.Bind("artifact", r.reconcileArtifact, obj, st),
	)
}

// reconcileStorage re-verifies the stored index against its digest. Sets
// ArtifactInStorage: True when it is there, False (StorageOperationFailed)
// when it is missing or changed, which makes the next steps store it
// again; no condition before a first artifact.
func (r *HelmRepositoryReconciler) reconcileStorage(_ context.Context, obj *sourcev1.HelmRepository, st *repoState) error {
	st.artifactOK = verifyArtifact(r.Storage, obj, obj.Status.Artifact)
	return nil
}

// reconcileIndex fetches index.yaml with the Helm SDK's getter (the
// Secrets' basic auth and TLS, spec.timeout, at most --helm-index-max-size
// bytes) and parses and verifies it with the SDK's index loader. Sets
// FetchFailed: True (AuthenticationFailed, IndexationFailed, or
// InsecureConnectionsDisallowed for an https:// repository redirecting to
// plain http://, stalled and polled) on failure, deleted on success; the
// stored artifact stays as it was.
func (r *HelmRepositoryReconciler) reconcileIndex(ctx context.Context, obj *sourcev1.HelmRepository, st *repoState) error {
	err := r.fetchIndex(ctx, obj, st)
	if err == nil {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		return nil
	}
	msg := message.StripUserInfo(err.Error())
	switch {
	case errors.Is(err, helm.ErrInsecure):
		// Only the server (or the spec) changing helps; polled like a
		// GitRepository's redirect to http://.
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, meta.InsecureConnectionsDisallowedReason, "%s", msg)
		return plumbreconcile.Stalled(meta.InsecureConnectionsDisallowedReason, errors.New(msg)).Polling(obj.GetRequeueAfter())
	case errors.Is(err, errCredentials) || helm.IsUnauthorized(err):
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, "%s", msg)
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, errors.New(msg))
	}
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourcev1.IndexationFailedReason, "%s", msg)
	return plumbreconcile.Failed(sourcev1.IndexationFailedReason, errors.New(msg))
}

func (r *HelmRepositoryReconciler) fetchIndex(ctx context.Context, obj *sourcev1.HelmRepository, st *repoState) error {
	creds, err := helmCredentials(ctx, r.Client, obj)
	if err != nil {
		return err
	}
	u, err := helm.IndexURL(obj.Spec.URL)
	if err != nil {
		return err
	}
	f := helm.Fetcher{RepoURL: obj.Spec.URL, Credentials: creds, Timeout: obj.GetTimeout().Duration, Addresses: r.Addresses}
	b, err := f.Get(u, maxOr(r.MaxIndexSize, DefaultMaxIndexSize))
	if err != nil {
		return fmt.Errorf("fetching the index: %w", err)
	}
	if _, err := helm.ParseIndex(b); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	st.index, st.digest = b, helm.Digest(b)
	return nil
}

// reconcileArtifact stores the index as
// helmrepository/<ns>/<name>/index-<sha256>.yaml (revision: its digest),
// sets status.artifact and status.url, emits NewArtifact for a new
// revision and keeps the newest --artifact-retention-records files. Sets
// ArtifactInStorage.
func (r *HelmRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.HelmRepository, st *repoState) error {
	ref := helmRepositoryRef(obj)
	prev := obj.Status.Artifact
	if !st.artifactOK || prev.Digest != st.digest {
		a, err := r.Storage.Store(ctx, ref, "index-"+strings.TrimPrefix(st.digest, "sha256:")+".yaml", strings.NewReader(string(st.index)))
		if err != nil {
			conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
				"storing the artifact failed: %v", err)
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
		}
		a.Revision = st.digest
		obj.Status.Artifact = a
		recordNewArtifact(r.Events, obj, prev, a, st.artifactOK, sameRevisionAndDigest)
	}
	obj.Status.URL = obj.Status.Artifact.URL
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", obj.Status.Artifact.Revision)
	garbageCollect(ctx, r.Storage, ref, obj.Status.Artifact)
	return nil
}

// reconcileOCI checks an OCI repository's settings without contacting it,
// as Flux's v1 OCI HelmRepository does: the URL names a registry and
// repository (InvalidSpec, stalled, otherwise), the Secrets exist and
// hold usable credentials (AuthenticationFailed). HelmCharts contact the
// registry. An OCI repository has no artifact: one left from an earlier
// type default is removed from status and storage.
func (r *HelmRepositoryReconciler) reconcileOCI(ctx context.Context, obj *sourcev1.HelmRepository, _ *repoState) error {
	conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
	if obj.Status.Artifact != nil || obj.Status.URL != "" {
		if err := r.Storage.Remove(helmRepositoryRef(obj)); err != nil {
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
		}
		obj.Status.Artifact, obj.Status.URL = nil, ""
	}
	if _, err := helm.OCIRef(obj.Spec.URL); err != nil {
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, meta.InvalidSpecReason, "%s", err.Error())
		return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
	}
	if _, err := helmCredentials(ctx, r.Client, obj); err != nil {
		conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, "%s", err.Error())
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	return nil
}

func helmRepositoryRef(obj *sourcev1.HelmRepository) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.HelmRepositoryKind, Namespace: obj.Namespace, Name: obj.Name}
}

func maxOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}
