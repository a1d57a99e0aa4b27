package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/compose"
)

// ArtifactGeneratorReconciler turns ArtifactGenerators into
// ExternalArtifacts: the artifacts of the sources they name, read from this
// controller's own storage, copied into new trees and packed like a Git
// checkout.
type ArtifactGeneratorReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// TmpDir holds the extracted sources and the trees being built; "" is
	// os.TempDir().
	TmpDir string
	// Limits bound each source's extracted artifact and each generated
	// tree (files, bytes); zero fields take pkg/artifact's defaults, the
	// limits render-controller extracts a GitRepository's artifact with.
	Limits artifact.Limits
	// NoCrossNamespaceRefs refuses sources in another namespace than the
	// generator's (--no-cross-namespace-refs): a generator would otherwise
	// republish another tenant's files in its own namespace.
	NoCrossNamespaceRefs bool
	// RequeueDependency is how soon a generator whose source has no
	// artifact yet looks again (a watch usually brings it back first).
	RequeueDependency time.Duration

	sk *plumbreconcile.Controller[*sourceextv1beta1.ArtifactGenerator]
}

// generatorSourceIndexKey indexes ArtifactGenerators by their sources,
// "<Kind>/<namespace>/<name>".
const generatorSourceIndexKey = ".spec.sources"

// SetupWithManager registers the reconciler: generators on creation, spec
// change and requestedAt; every generator whose source got a new artifact
// or changed readiness; and the generator of an ExternalArtifact it owns
// that was changed or deleted by someone else.
func (r *ArtifactGeneratorReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sourceextv1beta1.ArtifactGenerator{}, generatorSourceIndexKey, func(o client.Object) []string {
		ag := o.(*sourceextv1beta1.ArtifactGenerator)
		var keys []string
		for _, s := range ag.Spec.Sources {
			keys = append(keys, sourceKey(s.Kind, sourceNamespace(ag, s), s.Name))
		}
		return keys
	}); err != nil {
		return fmt.Errorf("indexing ArtifactGenerators by source: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("artifactgenerator").
		For(&sourceextv1beta1.ArtifactGenerator{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			plumbreconcile.RequestedPredicate{},
		))).
		Owns(&sourcev1.ExternalArtifact{})
	for _, kind := range generatorSourceKinds {
		b = b.Watches(kind.newObject(), handler.EnqueueRequestsFromMapFunc(r.generatorsOf(kind.name)),
			builder.WithPredicates(sourceChanged{}))
	}
	return b.WithOptions(opts).Complete(r)
}

// generatorSourceKinds are the kinds spec.sources may name (the CRD's
// enum): source-controller's own, whose artifacts are in its storage.
var generatorSourceKinds = []struct {
	name      string
	newObject func() client.Object
}{
	{sourcev1.GitRepositoryKind, func() client.Object { return &sourcev1.GitRepository{} }},
	{sourcev1.OCIRepositoryKind, func() client.Object { return &sourcev1.OCIRepository{} }},
	{sourcev1.BucketKind, func() client.Object { return &sourcev1.Bucket{} }},
	{sourcev1.HelmChartKind, func() client.Object { return &sourcev1.HelmChart{} }},
	{sourcev1.ExternalArtifactKind, func() client.Object { return &sourcev1.ExternalArtifact{} }},
}

func (r *ArtifactGeneratorReconciler) generatorsOf(kind string) handler.MapFunc {
	return plumbreconcile.Referrers(r.Client, func() client.ObjectList { return &sourceextv1beta1.ArtifactGeneratorList{} },
		generatorSourceIndexKey, func(o client.Object) string { return sourceKey(kind, o.GetNamespace(), o.GetName()) }, false)
}

func sourceKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func sourceNamespace(ag *sourceextv1beta1.ArtifactGenerator, s sourceextv1beta1.SourceReference) string {
	if s.Namespace != "" {
		return s.Namespace
	}
	return ag.Namespace
}

func (r *ArtifactGeneratorReconciler) newSkeleton() *plumbreconcile.Controller[*sourceextv1beta1.ArtifactGenerator] {
	return &plumbreconcile.Controller[*sourceextv1beta1.ArtifactGenerator]{
		Condition:     meta.ReadyCondition,
		DefaultReason: kustomizev1.BuildFailedReason,
		Events:        r.Events,
		Metrics:       r.Metrics,
		OwnedStatus:   func(obj *sourceextv1beta1.ArtifactGenerator) any { return &obj.Status },
		Client:        r.Client,
		FieldManager:  FieldManager,
		Succeeded: func(obj *sourceextv1beta1.ArtifactGenerator) string {
			return fmt.Sprintf("generated %d artifact(s)", len(obj.Status.Inventory))
		},
		Keeping: func(obj *sourceextv1beta1.ArtifactGenerator) string {
			if len(obj.Status.Inventory) == 0 {
				return ""
			}
			return fmt.Sprintf("keeping the last %d generated artifact(s)", len(obj.Status.Inventory))
		},
		Finalizer: plumbreconcile.Finalizer[*sourceextv1beta1.ArtifactGenerator]{
			Client: r.Client, FieldManager: FieldManager, Name: Finalizer, Finalize: r.finalize,
		},
	}
}

// generatorState is what one reconcile's steps hand to each other.
type generatorState struct {
	// sources are the spec's sources by alias, with their artifacts.
	sources map[string]*meta.Artifact
	digest  string
	tmp     string
	// outputs are the artifacts to build: spec.artifacts, or with
	// spec.pathPattern their expansion per matched folder.
	outputs []outputArtifact
	// built are the new artifacts by name, in outputs' order.
	built []builtArtifact
}

type builtArtifact struct {
	name     string
	artifact *meta.Artifact
	// labels are the ExternalArtifact's, besides the generator's own.
	labels map[string]string
}

// Reconcile runs, for a live generator, the steps sources, build and
// publish (pkg/reconcile summarizes, writes status and requeues).
func (r *ArtifactGeneratorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj, st := &sourceextv1beta1.ArtifactGenerator{}, &generatorState{}
	return readAndRun(ctx, r.Client, r.sk, req, obj, &st.tmp,
		plumbreconcile.Bind("sources", r.reconcileSources, obj, st),
		plumbreconcile.Bind("build", r.reconcileBuild, obj, st),
		plumbreconcile.Bind("publish", r.reconcilePublish, obj, st),
	)
}

// reconcileSources checks the spec's aliases and reads each source's
// artifact. It fails with ValidationFailed (stalled) for an alias named
// twice, an operation naming no source, or a source in another namespace
// under --no-cross-namespace-refs; with ArtifactConflict (stalled) when an
// ExternalArtifact of a generated name is another's; with SourceFetchFailed while a source
// is missing or has no artifact (looked at again after
// RequeueDependency, and whenever the source changes). When the sources
// are those the inventory was built from, for this generation, and every
// generated ExternalArtifact still carries its artifact, it stops: there
// is nothing to build.
func (r *ArtifactGeneratorReconciler) reconcileSources(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, st *generatorState) error {
	if err := r.validate(obj); err != nil {
		return plumbreconcile.Stalled(kustomizev1.ValidationFailedReason, err)
	}
	st.sources = map[string]*meta.Artifact{}
	h := sha256.New()
	for _, s := range obj.Spec.Sources {
		a, err := r.sourceArtifact(ctx, obj, s)
		if err != nil {
			return plumbreconcile.Waiting(sourceextv1beta1.SourceFetchFailedReason, r.RequeueDependency, err)
		}
		st.sources[s.Alias] = a
		// The revision too: spec.artifacts[].revision takes it over, and a
		// new commit of an unchanged tree keeps the digest.
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\n", s.Alias, s.Kind, sourceNamespace(obj, s), s.Name, a.Revision, a.Digest)
	}
	st.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	// With spec.pathPattern the names are known only once the source is
	// read (reconcileBuild checks them then); the same generation and
	// sources expand to the same names, so the inventory's count is not
	// compared either.
	templated := obj.Spec.PathPattern != ""
	if !templated {
		for _, a := range obj.Spec.OutputArtifacts {
			if _, err := r.ownArtifact(ctx, obj, a.Name); err != nil {
				return err
			}
		}
	}
	if obj.Status.ObservedGeneration == obj.Generation && obj.Status.ObservedSourcesDigest == st.digest &&
		(templated || len(obj.Status.Inventory) == len(obj.Spec.OutputArtifacts)) && r.inventoryIntact(ctx, obj) {
		return plumbreconcile.ErrStop
	}
	return nil
}

// validate checks what the CRD's schema cannot: every "@alias" names a
// source, sources stay in the namespace when they must,
// spec.commonMetadata's keys and label values are valid, and
// spec.pathPattern parses with every placeholder one of its captures.
func (r *ArtifactGeneratorReconciler) validate(obj *sourceextv1beta1.ArtifactGenerator) error {
	aliases := map[string]bool{}
	for _, s := range obj.Spec.Sources {
		if aliases[s.Alias] {
			return fmt.Errorf("source alias %q is used twice", s.Alias)
		}
		aliases[s.Alias] = true
		if r.NoCrossNamespaceRefs && sourceNamespace(obj, s) != obj.Namespace {
			return fmt.Errorf("cross-namespace references are not allowed: source %q is %s %s/%s", s.Alias, s.Kind, s.Namespace, s.Name)
		}
	}
	if err := validateGeneratorMetadata(obj); err != nil {
		return err
	}
	if obj.Spec.PathPattern != "" {
		alias, _, _ := splitRef(obj.Spec.PathPattern)
		if !aliases[alias] {
			return fmt.Errorf("spec.pathPattern %q names @%s, which is not a source alias", obj.Spec.PathPattern, alias)
		}
		if _, err := pathPattern(obj); err != nil {
			return err
		}
	}
	for _, a := range obj.Spec.OutputArtifacts {
		refs := []string{a.Revision, a.OriginRevision}
		for _, c := range a.Copy {
			alias, _, _ := splitRef(c.From)
			refs = append(refs, "@"+alias)
		}
		for _, ref := range refs {
			if ref != "" && !aliases[strings.TrimPrefix(ref, "@")] {
				return fmt.Errorf("artifact %q names %q, which is not a source alias", a.Name, ref)
			}
		}
	}
	return nil
}

// splitRef splits "@<alias>/<path>" (or "@artifact/<path>").
func splitRef(ref string) (alias, rest string, ok bool) {
	if !strings.HasPrefix(ref, "@") {
		return "", "", false
	}
	alias, rest, ok = strings.Cut(ref[1:], "/")
	return alias, rest, ok
}

// sourceArtifact reads the source s and returns its artifact, which must
// be in this controller's storage: the artifact's URL is the storage's
// own for its path.
func (r *ArtifactGeneratorReconciler) sourceArtifact(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, s sourceextv1beta1.SourceReference) (*meta.Artifact, error) {
	var src client.Object
	for _, k := range generatorSourceKinds {
		if k.name == s.Kind {
			src = k.newObject()
		}
	}
	if src == nil {
		return nil, fmt.Errorf("source %q: kind %s is not a source kind", s.Alias, s.Kind)
	}
	key := types.NamespacedName{Namespace: sourceNamespace(obj, s), Name: s.Name}
	if err := r.Get(ctx, key, src); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("source %q: %s %s not found", s.Alias, s.Kind, key)
		}
		return nil, fmt.Errorf("source %q: reading %s %s: %w", s.Alias, s.Kind, key, err)
	}
	a := src.(meta.ArtifactHolder).GetArtifact()
	if a == nil || a.Digest == "" {
		return nil, fmt.Errorf("source %q: %s %s has no artifact yet", s.Alias, s.Kind, key)
	}
	if a.URL != r.Storage.URL(a.Path) {
		return nil, fmt.Errorf("source %q: the artifact of %s %s is served at %s, not from source-controller's storage; only artifacts stored here can be composed", s.Alias, s.Kind, key, a.URL)
	}
	return a, nil
}

// inventoryIntact reports whether every ExternalArtifact of the inventory
// exists, is the generator's, and carries the inventory's artifact, whose
// file is in storage.
func (r *ArtifactGeneratorReconciler) inventoryIntact(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator) bool {
	for _, ref := range obj.Status.Inventory {
		var ea sourcev1.ExternalArtifact
		if err := r.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &ea); err != nil {
			return false
		}
		if !metav1.IsControlledBy(&ea, obj) || !ea.Status.Artifact.HasDigest(ref.Digest) || r.Storage.Verify(ea.Status.Artifact) != nil {
			return false
		}
	}
	return true
}

// reconcileBuild extracts the sources the copy operations read (with the
// digest check and Limits of any artifact download), expands
// spec.pathPattern (expandOutputs: ValidationFailed or LimitExceeded,
// stalled; an expanded name that is another's is ArtifactConflict),
// carries out each
// artifact's operations into a tree of its own, and packs it into
// storage as externalartifact/<namespace>/<name>/<content hash>.tar.gz.
// A source artifact that fails its checks is SourceFetchFailed (retried);
// a copy operation that cannot be carried out (nothing matches, a path
// leaving its source or the artifact, over the limits, a Merge of a file
// that is not a YAML map) is BuildFailed, stalled until the spec or a
// source changes. Nothing is published unless every artifact was built.
func (r *ArtifactGeneratorReconciler) reconcileBuild(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, st *generatorState) error {
	var err error
	if st.tmp, err = os.MkdirTemp(r.TmpDir, "artifactgenerator-"+obj.Namespace+"-"+obj.Name+"-"); err != nil {
		return err
	}
	trees := map[string]string{}
	extract := func(alias string) error {
		if _, ok := trees[alias]; ok {
			return nil
		}
		dir := filepath.Join(st.tmp, "sources", alias)
		src := st.sources[alias]
		if err := artifact.ExtractFile(r.Storage.LocalPath(src.Path), src.Digest, dir, r.Limits); err != nil {
			return plumbreconcile.Failed(sourceextv1beta1.SourceFetchFailedReason,
				fmt.Errorf("source %q: artifact %s: %w", alias, src.Revision, err))
		}
		trees[alias] = dir
		return nil
	}
	if obj.Spec.PathPattern != "" {
		alias, _, _ := splitRef(obj.Spec.PathPattern)
		if err := extract(alias); err != nil {
			return err
		}
	}
	if st.outputs, err = expandOutputs(obj, trees); err != nil {
		return err
	}
	for _, a := range st.outputs {
		if _, err := r.ownArtifact(ctx, obj, a.Name); err != nil {
			return err
		}
		for _, c := range a.Copy {
			alias, _, _ := splitRef(c.From)
			if err := extract(alias); err != nil {
				return err
			}
		}
	}
	limits := compose.Limits{MaxFiles: r.Limits.MaxFiles, MaxBytes: r.Limits.MaxExtractedBytes}
	if limits.MaxFiles <= 0 {
		limits.MaxFiles = artifact.DefaultMaxFiles
	}
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = artifact.DefaultMaxExtractedBytes
	}
	for i, a := range st.outputs {
		dir := filepath.Join(st.tmp, "artifacts", fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		out := compose.NewOutput(dir, limits)
		for _, c := range a.Copy {
			alias, from, _ := splitRef(c.From)
			_, to, _ := splitRef(c.To)
			op := compose.Copy{From: from, To: to, Exclude: c.Exclude, Merge: c.Strategy == sourceextv1beta1.MergeStrategy}
			if err := out.Apply(alias, trees[alias], op); err != nil {
				return plumbreconcile.Stalled(kustomizev1.BuildFailedReason, fmt.Errorf("artifact %q: %w", a.Name, err))
			}
		}
		built, err := r.store(ctx, obj, a.OutputArtifact, st, dir)
		if err != nil {
			return plumbreconcile.Failed(sourcev1.StorageOperationFailedReason, fmt.Errorf("artifact %q: storing: %w", a.Name, err))
		}
		st.built = append(st.built, builtArtifact{name: a.Name, artifact: built, labels: a.labels})
	}
	return nil
}

// store packs the tree dir of artifact a and describes it: revision
// "latest@sha256:<content hash>", or the revision of the source
// spec.artifacts[].revision names; the origin revision in metadata.
func (r *ArtifactGeneratorReconciler) store(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, a sourceextv1beta1.OutputArtifact, st *generatorState, dir string) (*meta.Artifact, error) {
	sum, err := treeHash(dir)
	if err != nil {
		return nil, err
	}
	ref := artifact.Ref{Kind: sourcev1.ExternalArtifactKind, Namespace: obj.Namespace, Name: a.Name}
	stored, err := r.Storage.Pack(ctx, ref, sum+".tar.gz", dir, artifact.PackOptions{})
	if err != nil {
		return nil, err
	}
	stored.Revision = "latest@sha256:" + sum
	if a.Revision != "" {
		stored.Revision = st.sources[strings.TrimPrefix(a.Revision, "@")].Revision
	}
	if a.OriginRevision != "" {
		src := st.sources[strings.TrimPrefix(a.OriginRevision, "@")]
		origin := src.Metadata[sourceextv1beta1.OriginRevisionKey]
		if origin == "" {
			origin = src.Revision
		}
		stored.Metadata = map[string]string{sourceextv1beta1.OriginRevisionKey: origin}
	}
	return stored, nil
}

// treeHash is the hex sha256 of a tree's files: each slash path, size and
// content, in lexical order of the paths.
func treeHash(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		info, err := f.Stat()
		if err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), info.Size())
			_, err = io.Copy(h, f)
		}
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// reconcilePublish creates or updates an ExternalArtifact per built
// artifact, owned by the generator, with status.artifact pointing at the
// stored file and Ready True; deletes the generator's ExternalArtifacts no
// longer in the spec and their files; and records the inventory. An
// ExternalArtifact of a generated name that is not the generator's is
// left alone, and the generator stalls (ArtifactConflict).
func (r *ArtifactGeneratorReconciler) reconcilePublish(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, st *generatorState) error {
	var inventory []sourceextv1beta1.ExternalArtifactReference
	for _, b := range st.built {
		if err := r.publish(ctx, obj, b); err != nil {
			return err
		}
		inventory = append(inventory, sourceextv1beta1.ExternalArtifactReference{
			Name: b.name, Namespace: obj.Namespace, Digest: b.artifact.Digest, Filename: filepath.Base(b.artifact.Path),
		})
	}
	if err := r.prune(ctx, obj, st.built); err != nil {
		return err
	}
	slices.SortFunc(inventory, func(a, b sourceextv1beta1.ExternalArtifactReference) int { return strings.Compare(a.Name, b.Name) })
	obj.Status.Inventory = inventory
	obj.Status.ObservedSourcesDigest = st.digest
	return nil
}

// ownArtifact reads the ExternalArtifact name, which must be the
// generator's or not exist (then the empty object); another's stalls the
// generator (ArtifactConflict), checked before anything is built for it
// and again before it is written.
func (r *ArtifactGeneratorReconciler) ownArtifact(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, name string) (*sourcev1.ExternalArtifact, error) {
	var existing sourcev1.ExternalArtifact
	err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, &existing)
	switch {
	case apierrors.IsNotFound(err):
		return &sourcev1.ExternalArtifact{}, nil
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(&existing, obj):
		return nil, plumbreconcile.Stalled(sourceextv1beta1.ArtifactConflictReason,
			fmt.Errorf("ExternalArtifact %s/%s exists and is not this generator's", obj.Namespace, name))
	}
	return &existing, nil
}

func (r *ArtifactGeneratorReconciler) publish(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, b builtArtifact) error {
	existing, err := r.ownArtifact(ctx, obj, b.name)
	if err != nil {
		return err
	}
	a := b.artifact
	if prev := existing.Status.Artifact; prev.HasDigest(a.Digest) && prev.Revision == a.Revision && prev.URL == a.URL {
		// The same artifact: keep its lastUpdateTime, so nothing downstream
		// sees news.
		a.LastUpdateTime = prev.LastUpdateTime
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"sourceRef": map[string]any{
			"apiVersion": sourceextv1beta1.GroupVersion.String(), "kind": sourceextv1beta1.ArtifactGeneratorKind,
			"name": obj.Name, "namespace": obj.Namespace,
		}},
	}}
	u.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind))
	u.SetNamespace(obj.Namespace)
	u.SetName(b.name)
	labels, annotations := generatedMetadata(obj, b.labels)
	u.SetLabels(labels)
	if len(annotations) > 0 {
		u.SetAnnotations(annotations)
	}
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: sourceextv1beta1.GroupVersion.String(), Kind: sourceextv1beta1.ArtifactGeneratorKind,
		Name: obj.Name, UID: obj.UID, Controller: &yes, BlockOwnerDeletion: &yes,
	}})
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying ExternalArtifact %s/%s: %w", obj.Namespace, b.name, err)
	}
	ea := &sourcev1.ExternalArtifact{}
	ea.SetNamespace(obj.Namespace)
	ea.SetName(b.name)
	ea.Status.Artifact = a
	// SetStatusCondition keeps the transition time of an unchanged Ready.
	ea.Status.Conditions = slices.Clone(existing.Status.Conditions)
	apimeta.SetStatusCondition(&ea.Status.Conditions, metav1.Condition{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
		Message: fmt.Sprintf("stored artifact for revision %q", a.Revision), ObservedGeneration: existing.Generation,
	})
	status, err := plumbreconcile.ToStatusMap(&ea.Status)
	if err != nil {
		return err
	}
	if err := plumbreconcile.ApplyStatus(ctx, r.Client, ea, FieldManager, status); err != nil {
		return err
	}
	if !existing.Status.Artifact.HasDigest(a.Digest) || existing.Status.Artifact.Revision != a.Revision {
		r.Events.Record(obj, events.SeverityInfo, sourcev1.NewArtifactReason,
			fmt.Sprintf("stored artifact %s for revision %q", b.name, a.Revision),
			events.WithRevision(a.Revision), events.WithMetadata(map[string]string{"digest": a.Digest, "url": a.URL}))
	}
	garbageCollect(ctx, r.Storage, artifact.Ref{Kind: sourcev1.ExternalArtifactKind, Namespace: obj.Namespace, Name: b.name}, a)
	return nil
}

// prune deletes the generator's ExternalArtifacts (by label and owner)
// that are not among keep, and their stored files.
func (r *ArtifactGeneratorReconciler) prune(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, keep []builtArtifact) error {
	var list sourcev1.ExternalArtifactList
	if err := r.List(ctx, &list, client.InNamespace(obj.Namespace),
		client.MatchingLabels{sourceextv1beta1.GeneratorLabel: string(obj.UID)}); err != nil {
		return fmt.Errorf("listing the generator's ExternalArtifacts: %w", err)
	}
	var errs []error
	for i := range list.Items {
		ea := &list.Items[i]
		if !metav1.IsControlledBy(ea, obj) || slices.ContainsFunc(keep, func(b builtArtifact) bool { return b.name == ea.Name }) {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, ea, client.Preconditions{UID: &ea.UID})); err != nil {
			errs = append(errs, fmt.Errorf("deleting ExternalArtifact %s/%s: %w", ea.Namespace, ea.Name, err))
			continue
		}
		if err := r.Storage.Remove(artifact.Ref{Kind: sourcev1.ExternalArtifactKind, Namespace: ea.Namespace, Name: ea.Name}); err != nil {
			errs = append(errs, err)
		}
		r.Events.Record(obj, events.SeverityInfo, sourceextv1beta1.ArtifactDeletedReason, fmt.Sprintf("deleted ExternalArtifact %s, no longer generated", ea.Name))
	}
	return errors.Join(errs...)
}

// finalize deletes a deleted generator's ExternalArtifacts and their
// files (the API server's garbage collector would delete the objects
// too, but not the files), then releases the finalizer.
func (r *ArtifactGeneratorReconciler) finalize(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator) error {
	if err := r.prune(ctx, obj, nil); err != nil {
		return err
	}
	r.Metrics.Forget(obj.Namespace, obj.Name)
	return r.sk.Finalizer.Release(ctx, obj)
}
