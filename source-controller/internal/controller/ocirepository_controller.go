package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/oci"
)

// Defaults of --oci-max-layer-size (the compressed layer) and
// --oci-max-extracted-size (its files): together 250 MiB of /tmp per
// pull, so two pulls at once fit beside two Git fetches at
// --max-repository-size in source-controller's /tmp (deploy/README.md).
const (
	DefaultMaxOCILayerSize     int64 = 50 << 20
	DefaultMaxOCIExtractedSize int64 = 200 << 20
)

// OCIRepositoryReconciler turns OCIRepository objects into tar.gz
// artifacts: one layer of an OCI artifact, extracted and repacked or
// copied.
type OCIRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// TmpDir holds pulled layers while they are checked; "" is os.TempDir().
	TmpDir string
	// MaxLayerSize bounds the compressed layer (--oci-max-layer-size); 0
	// is DefaultMaxOCILayerSize.
	MaxLayerSize int64
	// Addresses is where it may connect (--allowed-private-networks;
	// source-controller/internal/egress); the zero policy refuses every
	// loopback and private address.
	Addresses netguard.Policy
	// MaxExtractedSize bounds the layer's extracted files
	// (--oci-max-extracted-size); 0 is DefaultMaxOCIExtractedSize. The
	// number of entries is bounded by pkg/artifact's default.
	MaxExtractedSize int64

	sk *plumbreconcile.Controller[*sourcev1.OCIRepository]
}

// SetupWithManager registers the reconciler: on creation, spec change,
// requestedAt, and every spec.interval (with jitter).
func (r *OCIRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	return ctrl.NewControllerManagedBy(mgr).
		Named("ocirepository").
		For(&sourcev1.OCIRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		WithOptions(opts).
		Complete(r)
}

// ociState is what one reconcile's steps hand to each other.
type ociState struct {
	artifactOK bool
	// upToDate: the reference resolves to the stored artifact's revision
	// for this generation; nothing is pulled.
	upToDate bool
	digest   v1.Hash
	revision string
	// client reaches the repository for the steps after source, within
	// spec.timeout; cancel ends that bound.
	client *oci.Client
	cancel context.CancelFunc
	tmp    string
	layer  *oci.Layer
	// layerFile is the pulled layer; tree the extracted one.
	layerFile, tree string
}

func (r *OCIRepositoryReconciler) newSkeleton() *plumbreconcile.Controller[*sourcev1.OCIRepository] {
	return &plumbreconcile.Controller[*sourcev1.OCIRepository]{
		Condition:     meta.ReadyCondition,
		DefaultReason: sourcev1.OCIPullFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourcev1.OCIRepository) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded:     storedRevision[*sourcev1.OCIRepository],
		Keeping:       keptRevision[*sourcev1.OCIRepository],
		Finalizer:     finalizer(r.Client, r.Storage, r.Metrics, ociRepositoryRef),
	}
}

// Reconcile runs, for a live object, the steps storage, source, verify,
// layer and artifact (pkg/reconcile summarizes, writes status and
// requeues).
func (r *OCIRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.OCIRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := r.sk.Start(ctx, obj); !ok {
		return ctrl.Result{}, err
	}
	st := &ociState{}
	defer func() {
		if st.cancel != nil {
			st.cancel()
		}
		if st.tmp != "" {
			_ = os.RemoveAll(st.tmp)
		}
	}()
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("storage", r.reconcileStorage, obj, st),
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("verify", r.reconcileVerify, obj, st),
		plumbreconcile.Bind("layer", r.reconcileLayer, obj, st),
		plumbreconcile.Bind("artifact", r.reconcileArtifact, obj, st),
	)
}

// reconcileStorage re-verifies the stored artifact against its digest
// (ArtifactInStorage, as for the other source kinds).
func (r *OCIRepositoryReconciler) reconcileStorage(_ context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	st.artifactOK = verifyArtifact(r.Storage, obj, obj.Status.Artifact)
	return nil
}

// reconcileSource resolves spec.ref to a manifest digest and decides
// whether there is anything new: nothing is when the verified artifact of
// this generation has that revision (and, with spec.verify,
// SourceVerified is True for this generation). Sets FetchFailed: True on
// failure with reason AuthenticationFailed (Secret missing or unusable,
// registry refused), InvalidSpec (stalled: URL, semver range or filter
// unusable) or OCIArtifactPullFailed (retried); deleted on success.
func (r *OCIRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	return fetchStep(obj, r.resolve(ctx, obj, st), ociFailureOf(obj))
}

// reconcileLayer pulls the selected layer of a new revision and extracts
// it with pkg/artifact's checks. Sets FetchFailed: True on failure with
// reason OCIArtifactLayerOperationFailed (stalled, polled every interval:
// no such layer, over --oci-max-layer-size, not a tar.gz, unsafe entries —
// a new push may fix it), AuthenticationFailed or OCIArtifactPullFailed
// (retried); deleted on success.
func (r *OCIRepositoryReconciler) reconcileLayer(_ context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	if st.upToDate {
		return nil
	}
	return fetchStep(obj, r.pullLayer(obj, st), ociFailureOf(obj))
}

// fetchStep records the outcome of a fetch from a remote in FetchFailed:
// deleted on success, True with the reason failure gives err otherwise.
func fetchStep(obj conditions.Setter, err error, failure func(error) *plumbreconcile.Error) error {
	if err == nil {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		return nil
	}
	f := failure(err)
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, f.Reason, "%s", f.Err.Error())
	return f
}

// ociFailureOf is what a failed pull of obj means: its reason, and
// whether retrying can help.
func ociFailureOf(obj *sourcev1.OCIRepository) func(error) *plumbreconcile.Error {
	return func(err error) *plumbreconcile.Error { return ociFailure(err, obj.Spec.Interval.Duration) }
}

func ociFailure(err error, interval time.Duration) *plumbreconcile.Error {
	msg := errors.New(message.StripUserInfo(err.Error()))
	var proxyErr *proxyError
	switch {
	case errors.As(err, &proxyErr):
		return plumbreconcile.Failed(sourcev1.ProxyConfigErrorReason, msg)
	case errors.Is(err, errCredentials), oci.KindOf(err) == oci.AuthFailed:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, msg)
	case oci.KindOf(err) == oci.InvalidSpec:
		return plumbreconcile.Stalled(meta.InvalidSpecReason, msg)
	case oci.KindOf(err) == oci.TooLarge, oci.KindOf(err) == oci.NoLayer, errors.Is(err, errLayer):
		return plumbreconcile.Stalled(sourcev1.OCILayerOperationFailedReason, msg).Polling(interval)
	}
	return plumbreconcile.Failed(sourcev1.OCIPullFailedReason, msg)
}

// errLayer marks a layer that was pulled but cannot be used.
var errLayer = errors.New("the layer cannot be used")

func (r *OCIRepositoryReconciler) resolve(ctx context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	o, err := r.clientOptions(ctx, obj)
	if err != nil {
		return err
	}
	ctx, st.cancel = context.WithTimeout(ctx, obj.GetTimeout().Duration)
	if st.client, err = oci.NewClient(ctx, obj.Spec.URL, o); err != nil {
		return err
	}
	var ref oci.Ref
	if s := obj.Spec.Reference; s != nil {
		ref = oci.Ref{Digest: s.Digest, SemVer: s.SemVer, SemverFilter: s.SemverFilter, Tag: s.Tag}
	}
	if st.digest, st.revision, err = st.client.Resolve(ref); err != nil {
		return err
	}
	st.upToDate = st.artifactOK && obj.Status.ObservedGeneration == obj.Generation &&
		obj.Status.Artifact.HasRevision(st.revision) && verifiedForGeneration(obj, obj.Spec.Verify != nil)
	return nil
}

func (r *OCIRepositoryReconciler) pullLayer(obj *sourcev1.OCIRepository, st *ociState) error {
	var err error
	if st.tmp, err = os.MkdirTemp(r.TmpDir, "ocirepository-"+obj.Namespace+"-"+obj.Name+"-"); err != nil {
		return err
	}
	st.layerFile = filepath.Join(st.tmp, "layer.tar.gz")
	mediaType := ""
	if s := obj.Spec.LayerSelector; s != nil {
		mediaType = s.MediaType
	}
	r.Metrics.Worked(obj.Namespace, obj.Name)
	maxSize := maxOr(r.MaxLayerSize, DefaultMaxOCILayerSize)
	if st.layer, err = st.client.Pull(st.digest, mediaType, maxSize, st.layerFile); err != nil {
		return err
	}
	// Extracted in both operations: a copied layer must be as safe to
	// extract for render-controller as a packed one.
	st.tree = filepath.Join(st.tmp, "tree")
	if err := artifact.ExtractFile(st.layerFile, st.layer.Digest.String(), st.tree, artifact.Limits{
		MaxArchiveBytes: maxSize, MaxExtractedBytes: maxOr(r.MaxExtractedSize, DefaultMaxOCIExtractedSize),
	}); err != nil {
		return fmt.Errorf("%w: layer %s of %s: %v", errLayer, st.layer.Digest, st.revision, err)
	}
	return nil
}

// clientOptions reads how to reach the registry: spec.secretRef's
// .dockerconfigjson, spec.certSecretRef's ca.crt, tls.crt and tls.key,
// and spec.proxySecretRef's proxy (Flux's keys for each).
func (r *OCIRepositoryReconciler) clientOptions(ctx context.Context, obj *sourcev1.OCIRepository) (oci.Options, error) {
	o := oci.Options{Insecure: obj.Spec.Insecure, Addresses: r.Addresses}
	var err error
	if o.DockerConfig, err = r.dockerConfig(ctx, obj); err != nil {
		return o, err
	}
	if o.TLS, err = certSecretTLS(ctx, r.Client, obj.Namespace, obj.Spec.CertSecretRef); err != nil {
		return o, err
	}
	scheme := "https://"
	if obj.Spec.Insecure {
		scheme = "http://"
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(obj.Spec.URL, "oci://"), "/")
	o.Proxy, err = proxySecretURL(ctx, r.Client, obj.Namespace, obj.Spec.ProxySecretRef, scheme+host)
	return o, err
}

// dockerConfig reads .dockerconfigjson of spec.secretRef; nil without one.
func (r *OCIRepositoryReconciler) dockerConfig(ctx context.Context, obj *sourcev1.OCIRepository) ([]byte, error) {
	ref := obj.Spec.SecretRef
	if ref == nil {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
	var secret corev1.Secret
	if err := r.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &oci.Error{Kind: oci.AuthFailed, Err: fmt.Errorf("spec.secretRef: Secret %s not found", key)}
		}
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	b, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, &oci.Error{Kind: oci.AuthFailed, Err: fmt.Errorf("spec.secretRef: Secret %s has no %s", key, corev1.DockerConfigJsonKey)}
	}
	return b, nil
}

// reconcileArtifact stores the content as
// ocirepository/<ns>/<name>/<manifest hex>.tar.gz: for extract, the
// extracted tree packed like a Git checkout (spec.ignore, .sourceignore);
// for copy, the layer unchanged. Records status.artifact (with the
// manifest's annotations as metadata), observedLayerSelector and
// observedIgnore, emits NewArtifact for a new revision, and keeps the
// newest --artifact-retention-records files. Sets ArtifactInStorage.
func (r *OCIRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	ref := ociRepositoryRef(obj)
	if !st.upToDate {
		prev := obj.Status.Artifact
		file := strings.TrimPrefix(st.digest.String(), "sha256:") + ".tar.gz"
		var a *meta.Artifact
		var err error
		if obj.LayerOperation() == sourcev1.OCILayerCopy {
			a, err = r.Storage.StoreFile(ctx, ref, file, st.layerFile)
		} else {
			a, err = r.Storage.Pack(ctx, ref, file, st.tree, artifact.PackOptions{Ignore: artifact.NewIgnorer(obj.Spec.Ignore)})
		}
		if err != nil {
			conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
				"storing the artifact failed: %v", err)
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
		}
		a.Revision = st.revision
		if len(st.layer.Annotations) > 0 {
			a.Metadata = st.layer.Annotations
		}
		obj.Status.Artifact = a
		obj.Status.ObservedLayerSelector = obj.Spec.LayerSelector.DeepCopy()
		obj.Status.ObservedIgnore = obj.Spec.Ignore
		recordNewArtifact(r.Events, obj, prev, a, st.artifactOK, sameRevisionAndDigest)
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", obj.Status.Artifact.Revision)
	garbageCollect(ctx, r.Storage, ref, obj.Status.Artifact)
	return nil
}

func ociRepositoryRef(obj *sourcev1.OCIRepository) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.OCIRepositoryKind, Namespace: obj.Namespace, Name: obj.Name}
}
