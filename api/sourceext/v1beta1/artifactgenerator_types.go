package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ArtifactGeneratorKind is the kind name of ArtifactGenerator.
const ArtifactGeneratorKind = "ArtifactGenerator"

// GeneratorLabel is set on every ExternalArtifact a generator made, to
// the generator's UID: a name may be longer than a label value may, and
// the UID also tells a generator from a later one of the same name.
const GeneratorLabel = "source.extensions.plumb.dev/generator"

// OriginRevisionKey is the artifact metadata key spec.artifacts[].originRevision
// fills, as Flux's (the OCI annotation of a source revision).
const OriginRevisionKey = "org.opencontainers.image.revision"

// The copy strategies of spec.artifacts[].copy[].strategy.
const (
	// OverwriteStrategy replaces a file already at the destination.
	OverwriteStrategy = "Overwrite"
	// MergeStrategy merges a YAML file into the one already at the
	// destination, as Helm merges values files (maps deeply, the later
	// file winning; anything else replaced).
	MergeStrategy = "Merge"
)

// Reasons of Ready=False and of the events. A copy operation that cannot
// be carried out is BuildFailed, and an alias naming no source
// ValidationFailed, as for Flux; those reasons' constants are the
// Kustomization's (kustomizev1), one constant per reason.
const (
	// SourceFetchFailedReason: a source is missing, has no artifact yet,
	// or its artifact cannot be read (retried; a source's change brings
	// the generator back at once).
	SourceFetchFailedReason = "SourceFetchFailed"
	// ArtifactConflictReason: an ExternalArtifact of a generated name
	// exists and is not this generator's.
	ArtifactConflictReason = "ArtifactConflict"
	// ArtifactDeletedReason: the event of an ExternalArtifact deleted
	// because the spec no longer lists it.
	ArtifactDeletedReason = "ArtifactDeleted"
)

// MaxGeneratedArtifacts bounds the ExternalArtifacts one generator makes:
// with spec.pathPattern, the matched folders times spec.artifacts. A
// repository with more folders than that would otherwise have one
// generator create objects and stored files without end.
const MaxGeneratedArtifacts = 100

// ArtifactGeneratorSpec says which sources to read and which
// ExternalArtifacts to compose from them.
// +kubebuilder:validation:XValidation:rule="self.artifacts.all(a, self.artifacts.exists_one(b, b.name == a.name))",message="artifact names must be unique"
// +kubebuilder:validation:XValidation:rule="self.sources.all(s, self.sources.exists_one(t, t.alias == s.alias))",message="source aliases must be unique"
// +kubebuilder:validation:XValidation:rule="has(self.pathPattern) && size(self.pathPattern) > 0 || self.artifacts.all(a, a.name.matches('^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$'))",message="artifact names must be valid object names when pathPattern is not set"
type ArtifactGeneratorSpec struct {
	// CommonMetadata are labels and annotations set on every generated
	// ExternalArtifact, over the ones the generator sets itself except its
	// own label (source.extensions.plumb.dev/generator), which is
	// reserved.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// PathPattern, "@<alias>/<pattern>", makes spec.artifacts templates:
	// every folder of the source's artifact whose path matches the pattern
	// gives one ExternalArtifact per entry of spec.artifacts. A "{name}"
	// in the pattern matches one path segment and is captured; "{name}"
	// in an artifact's name (lowercased) and in its copy operations'
	// from and to (as found) is replaced by the capture, and every
	// capture is a label of the generated ExternalArtifact. At most
	// MaxGeneratedArtifacts (100) artifacts are generated.
	// +optional
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	PathPattern string `json:"pathPattern,omitempty"`

	// Sources are the source objects whose artifacts the copy operations
	// read, each under an alias.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Sources []SourceReference `json:"sources"`

	// OutputArtifacts are the ExternalArtifacts to generate, one per
	// entry, in the generator's namespace.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	OutputArtifacts []OutputArtifact `json:"artifacts"`
}

// SourceReference names a source object and the alias copy operations
// call it by.
type SourceReference struct {
	// Alias is the source's name in copy operations ("@<alias>/...").
	// +required
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=63
	Alias string `json:"alias"`

	// Kind of the source.
	// +required
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository;Bucket;HelmChart;ExternalArtifact
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the source; the generator's when unset.
	// +optional
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// CommonMetadata are labels and annotations for generated objects.
type CommonMetadata struct {
	// Labels set on every generated ExternalArtifact.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations set on every generated ExternalArtifact.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// OutputArtifact is one ExternalArtifact to generate.
type OutputArtifact struct {
	// Name of the ExternalArtifact; with spec.pathPattern it may hold
	// "{capture}" placeholders, and must be an object name once they are
	// replaced.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Revision, "@<alias>", makes the artifact's revision that source's
	// revision; unset, it is "latest@<digest of the content>".
	// +optional
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`

	// OriginRevision, "@<alias>", records that source's revision in the
	// artifact's metadata under org.opencontainers.image.revision, without
	// changing the artifact's revision.
	// +optional
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	OriginRevision string `json:"originRevision,omitempty"`

	// Copy operations, carried out in order: a later one overwrites (or,
	// with strategy Merge, merges into) the files of an earlier one.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Copy []CopyOperation `json:"copy"`
}

// CopyOperation copies files of a source into the artifact, with cp's
// meanings: "@src/dir/" copies the folder, "@src/dir/**" its contents,
// "@src/*.yaml" the matching files; a "to" ending in "/" is a folder.
type CopyOperation struct {
	// From is "@<alias>/<path or glob>"; the path may not leave the
	// source ("..", absolute paths), and symlinks are not followed out of
	// it. With spec.pathPattern it may hold "{capture}" placeholders.
	// +required
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	From string `json:"from"`

	// To is "@artifact/<path>", the destination in the artifact. With
	// spec.pathPattern it may hold "{capture}" placeholders.
	// +required
	// +kubebuilder:validation:Pattern="^@(artifact)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	To string `json:"to"`

	// Exclude are globs of files From matches that are not copied,
	// matched against the path below From's non-glob prefix; a pattern
	// without "/" matches a file name at any depth.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Exclude []string `json:"exclude,omitempty"`

	// Strategy is Overwrite (the default) or Merge (YAML values files
	// merged as Helm merges values).
	// +optional
	// +kubebuilder:validation:Enum=Overwrite;Merge
	Strategy string `json:"strategy,omitempty"`
}

// ArtifactGeneratorStatus is what source-controller generated.
type ArtifactGeneratorStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Inventory is the ExternalArtifacts the generator made, sorted by name.
	// +optional
	Inventory []ExternalArtifactReference `json:"inventory,omitempty"`

	// ObservedSourcesDigest is a digest of the sources' revisions and
	// digests the inventory was built from.
	// +optional
	ObservedSourcesDigest string `json:"observedSourcesDigest,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ExternalArtifactReference is one generated ExternalArtifact.
type ExternalArtifactReference struct {
	// Name of the ExternalArtifact.
	Name string `json:"name"`
	// Namespace of the ExternalArtifact.
	Namespace string `json:"namespace"`
	// Digest of its artifact.
	Digest string `json:"digest"`
	// Filename of its artifact in storage.
	Filename string `json:"filename"`
}

// ArtifactGenerator composes ExternalArtifacts from the artifacts of other
// sources.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ag
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ArtifactGenerator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ArtifactGeneratorSpec   `json:"spec,omitempty"`
	Status ArtifactGeneratorStatus `json:"status,omitempty"`
}

// ArtifactGeneratorList is a list of ArtifactGenerator.
// +kubebuilder:object:root=true
type ArtifactGeneratorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ArtifactGenerator `json:"items"`
}

// GetConditions returns the status conditions.
func (in *ArtifactGenerator) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ArtifactGenerator) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *ArtifactGenerator) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ArtifactGenerator) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *ArtifactGenerator) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ArtifactGenerator) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
