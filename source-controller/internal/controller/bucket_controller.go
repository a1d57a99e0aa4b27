package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/bucket"
)

// Defaults of --bucket-max-objects, --bucket-max-object-size and
// --bucket-max-size: the objects of one fetch take at most 200 MiB of
// /tmp, as an OCIRepository's extracted layer does (deploy/README.md).
const (
	DefaultMaxBucketObjects          = 10_000
	DefaultMaxBucketObjectSize int64 = 50 << 20
	DefaultMaxBucketSize       int64 = 200 << 20
)

// BucketReconciler turns Bucket objects into tar.gz artifacts of the
// bucket's objects.
type BucketReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// TmpDir holds the downloaded objects while they are packed; "" is
	// os.TempDir().
	TmpDir string
	// Limits bound one fetch; a zero field is its Default.
	Limits bucket.Limits
	// Addresses is where it may connect (--allowed-private-networks;
	// source-controller/internal/egress); the zero policy refuses every
	// loopback and private address.
	Addresses netguard.Policy

	sk *plumbreconcile.Controller[*sourcev1.Bucket]
}

// SetupWithManager registers the reconciler: on creation, spec change,
// requestedAt, and every spec.interval (with jitter).
func (r *BucketReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	return ctrl.NewControllerManagedBy(mgr).
		Named("bucket").
		For(&sourcev1.Bucket{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		WithOptions(opts).
		Complete(r)
}

// bucketState is what one reconcile's steps hand to each other.
type bucketState struct {
	artifactOK bool
	// upToDate: the listing's revision is the stored artifact's for this
	// generation; nothing is downloaded.
	upToDate bool
	client   *bucket.Client
	index    *bucket.Index
	revision string
	// deadline is spec.timeout from the listing's start: it bounds the
	// downloads too.
	deadline time.Time
	tmp      string
}

func (r *BucketReconciler) newSkeleton() *plumbreconcile.Controller[*sourcev1.Bucket] {
	return &plumbreconcile.Controller[*sourcev1.Bucket]{
		Condition:     meta.ReadyCondition,
		DefaultReason: sourcev1.BucketOperationFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourcev1.Bucket) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded:     storedRevision[*sourcev1.Bucket],
		Keeping:       keptRevision[*sourcev1.Bucket],
		Finalizer:     finalizer(r.Client, r.Storage, r.Metrics, bucketRef),
	}
}

// Reconcile runs, for a live object, the steps storage, source, download
// and artifact (pkg/reconcile summarizes, writes status and requeues).
func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.Bucket{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := r.sk.Start(ctx, obj); !ok {
		return ctrl.Result{}, err
	}
	st := &bucketState{}
	defer func() {
		if st.client != nil {
			st.client.Close()
		}
		if st.tmp != "" {
			_ = os.RemoveAll(st.tmp)
		}
	}()
	return r.sk.Run(ctx, obj,
		plumbreconcile.Bind("storage", r.reconcileStorage, obj, st),
		plumbreconcile.Bind("source", r.reconcileSource, obj, st),
		plumbreconcile.Bind("download", r.reconcileDownload, obj, st),
		plumbreconcile.Bind("artifact", r.reconcileArtifact, obj, st),
	)
}

// reconcileStorage re-verifies the stored artifact against its digest
// (ArtifactInStorage, as for the other source kinds).
func (r *BucketReconciler) reconcileStorage(_ context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	st.artifactOK = verifyArtifact(r.Storage, obj, obj.Status.Artifact)
	return nil
}

// reconcileSource lists the bucket (spec.prefix, the ignore rules) within
// the limits and computes the revision; nothing is new when the verified
// artifact of this generation has it. Sets FetchFailed: True on failure
// with reason AuthenticationFailed (a Secret missing or without its keys,
// the server refused the credentials), ProxyConfigError, LimitExceeded
// (stalled, polled every interval: more or larger objects than the
// limits), BucketOperationFailed (retried; stalled and polled for a key
// that is not a safe path); deleted on success.
func (r *BucketReconciler) reconcileSource(ctx context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	return fetchStep(obj, r.list(ctx, obj, st), bucketFailureOf(obj))
}

// reconcileDownload downloads the listed objects of a new revision into
// a scratch folder, each checked against its listed ETag and size; sets
// FetchFailed as the source step.
func (r *BucketReconciler) reconcileDownload(ctx context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	if st.upToDate {
		return nil
	}
	return fetchStep(obj, r.download(ctx, obj, st), bucketFailureOf(obj))
}

func (r *BucketReconciler) list(ctx context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	opts, err := r.options(ctx, obj)
	if err != nil {
		return err
	}
	if st.client, err = bucket.New(opts, r.limits()); err != nil {
		return err
	}
	st.deadline = time.Now().Add(obj.GetTimeout().Duration)
	ctx, cancel := context.WithDeadline(ctx, st.deadline)
	defer cancel()
	if st.index, err = st.client.List(ctx, obj.Spec.BucketName, obj.Spec.Prefix, obj.Spec.Ignore); err != nil {
		return err
	}
	st.revision = st.index.Revision()
	st.upToDate = st.artifactOK && obj.Status.ObservedGeneration == obj.Generation &&
		obj.Status.Artifact.HasRevision(st.revision)
	return nil
}

func (r *BucketReconciler) download(ctx context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	var err error
	if st.tmp, err = os.MkdirTemp(r.TmpDir, "bucket-"+obj.Namespace+"-"+obj.Name+"-"); err != nil {
		return err
	}
	r.Metrics.Worked(obj.Namespace, obj.Name)
	ctx, cancel := context.WithDeadline(ctx, st.deadline)
	defer cancel()
	return st.client.Download(ctx, obj.Spec.BucketName, st.index, filepath.Join(st.tmp, "tree"))
}

func (r *BucketReconciler) limits() bucket.Limits {
	l := r.Limits
	if l.MaxObjects <= 0 {
		l.MaxObjects = DefaultMaxBucketObjects
	}
	l.MaxObjectSize = maxOr(l.MaxObjectSize, DefaultMaxBucketObjectSize)
	l.MaxTotalSize = maxOr(l.MaxTotalSize, DefaultMaxBucketSize)
	return l
}

// options reads how to reach the bucket: spec.secretRef's accesskey and
// secretkey, certSecretRef's tls.crt, tls.key and ca.crt, and the proxy
// of proxySecretRef (Flux's keys for each).
func (r *BucketReconciler) options(ctx context.Context, obj *sourcev1.Bucket) (bucket.Options, error) {
	o := bucket.Options{Endpoint: obj.Spec.Endpoint, Region: obj.Spec.Region, Insecure: obj.Spec.Insecure, Addresses: r.Addresses}
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := secretData(ctx, r.Client, obj.Namespace, "spec.secretRef", ref.Name)
		if err != nil {
			return o, err
		}
		o.AccessKey, o.SecretKey = string(data[sourcev1.BucketAccessKeyKey]), string(data[sourcev1.BucketSecretKeyKey])
		if o.AccessKey == "" || o.SecretKey == "" {
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return o, credentialsErrorf("spec.secretRef: Secret %s/%s must hold the keys %s and %s; it has [%s]",
				obj.Namespace, ref.Name, sourcev1.BucketAccessKeyKey, sourcev1.BucketSecretKeyKey, strings.Join(keys, ", "))
		}
	}
	var err error
	if o.TLS, err = certSecretTLS(ctx, r.Client, obj.Namespace, obj.Spec.CertSecretRef); err != nil {
		return o, err
	}
	scheme := "https://"
	if obj.Spec.Insecure {
		scheme = "http://"
	}
	if o.Proxy, err = proxySecretURL(ctx, r.Client, obj.Namespace, obj.Spec.ProxySecretRef, scheme+obj.Spec.Endpoint); err != nil {
		return o, err
	}
	return o, nil
}

// bucketFailureOf is what a failed listing or download of obj means: its
// reason, and whether retrying can help.
func bucketFailureOf(obj *sourcev1.Bucket) func(error) *plumbreconcile.Error {
	return func(err error) *plumbreconcile.Error {
		var proxyErr *proxyError
		switch {
		case errors.As(err, &proxyErr):
			return plumbreconcile.Failed(sourcev1.ProxyConfigErrorReason, err)
		case errors.Is(err, errCredentials), bucket.KindOf(err) == bucket.AuthFailed:
			return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, err)
		case bucket.KindOf(err) == bucket.LimitExceeded:
			return plumbreconcile.Stalled(meta.LimitExceededReason, err).Polling(obj.Spec.Interval.Duration)
		case bucket.KindOf(err) == bucket.Unsafe:
			return plumbreconcile.Stalled(sourcev1.BucketOperationFailedReason, err).Polling(obj.Spec.Interval.Duration)
		}
		return plumbreconcile.Failed(sourcev1.BucketOperationFailedReason, err)
	}
}

// reconcileArtifact packs the downloaded objects like a Git checkout
// (the index's ignore rules, nested .sourceignore files) into
// bucket/<ns>/<name>/<revision hex>.tar.gz, records status.artifact and
// observedIgnore, emits NewArtifact for a new revision, and keeps the
// newest --artifact-retention-records files. Sets ArtifactInStorage.
func (r *BucketReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.Bucket, st *bucketState) error {
	ref := bucketRef(obj)
	if !st.upToDate {
		prev := obj.Status.Artifact
		file := strings.TrimPrefix(st.revision, "sha256:") + ".tar.gz"
		tree := filepath.Join(st.tmp, "tree")
		// An empty bucket is an empty artifact, as in Flux.
		if err := os.MkdirAll(tree, 0o755); err != nil {
			return err
		}
		a, err := r.Storage.Pack(ctx, ref, file, tree, artifact.PackOptions{Ignore: st.index.Ignore})
		if err != nil {
			conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
				"storing the artifact failed: %v", err)
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, err)
		}
		a.Revision = st.revision
		obj.Status.Artifact = a
		obj.Status.ObservedIgnore = obj.Spec.Ignore
		recordNewArtifact(r.Events, obj, prev, a, st.artifactOK, sameRevisionAndDigest)
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", obj.Status.Artifact.Revision)
	garbageCollect(ctx, r.Storage, ref, obj.Status.Artifact)
	return nil
}

func bucketRef(obj *sourcev1.Bucket) artifact.Ref {
	return artifact.Ref{Kind: sourcev1.BucketKind, Namespace: obj.Namespace, Name: obj.Name}
}
