package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// OCIRepositoryKind is the kind name of OCIRepository.
const OCIRepositoryKind = "OCIRepository"

// Condition and event reasons specific to OCIRepository (the shared ones
// are in api/meta and gitrepository_types.go; docs/api/ocirepository.md
// lists them all).
const (
	// OCIPullFailedReason: resolving spec.ref or pulling the manifest or
	// layer failed (network, registry error, tag or digest not found, no
	// tag in the semver range).
	OCIPullFailedReason = "OCIArtifactPullFailed"
	// OCILayerOperationFailedReason: the selected layer is missing, larger
	// than --oci-max-layer-size, not a tar.gz, or holds an entry that
	// extraction refuses (a path out of the root, a link, too many files,
	// more than --oci-max-extracted-size).
	OCILayerOperationFailedReason = "OCIArtifactLayerOperationFailed"
	// InvalidArtifactSignatureReason: with spec.verify, the resolved
	// manifest carries no signature of the provider, or none that
	// spec.verify.secretRef trusts (SourceVerified=False).
	InvalidArtifactSignatureReason = "InvalidArtifactSignature"
)

// Signature providers of spec.verify.provider.
const (
	// OCIVerifyCosign checks cosign signatures made with a key pair.
	OCIVerifyCosign = "cosign"
	// OCIVerifyNotation checks notation signatures against a trust policy
	// and CA certificates.
	OCIVerifyNotation = "notation"
)

// Layer operations of spec.layerSelector.operation.
const (
	// OCILayerExtract unpacks the selected tar.gz layer and packs the tree
	// into the artifact as a GitRepository's checkout is (spec.ignore and
	// .sourceignore apply).
	OCILayerExtract = "extract"
	// OCILayerCopy stores the selected tar.gz layer unchanged as the
	// artifact (after checking that it extracts safely).
	OCILayerCopy = "copy"
)

// OCIRepositorySpec says which OCI artifact to pull and how often.
type OCIRepositorySpec struct {
	// URL of the repository, oci://<host>[:<port>]/<path>, with no tag or
	// digest: spec.ref says which artifact to pull.
	// +required
	// +kubebuilder:validation:Pattern="^oci://[^@]+$"
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// Reference says which artifact of the repository to pull; the tag
	// latest when unset.
	// +optional
	Reference *OCIRepositoryRef `json:"ref,omitempty"`

	// LayerSelector says which layer of the artifact's manifest holds the
	// content, and what to do with it; the first layer, extracted, when
	// unset.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson in
	// the same namespace with the registry credentials (kubectl create
	// secret docker-registry).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with a CA
	// certificate (ca.crt) to trust and/or a client certificate and key
	// (tls.crt, tls.key) for the registry's HTTPS connections (Flux's keys;
	// a registry's own certificate is then trusted without spec.insecure).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with the proxy
	// every registry request goes through: address (http://, https:// or
	// socks5://), optional username and password. The proxy's address must
	// pass --allowed-private-networks like any other connection.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Verify makes a revision an artifact only when its manifest carries a
	// signature that spec.verify.secretRef trusts; the last verified
	// artifact is served meanwhile.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// Interval between two checks of the reference.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds the registry requests of one reconcile.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore holds ignore rules in gitignore syntax, applied on top of the
	// content's .sourceignore when packing an extracted layer.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// OCIRepositoryRef names an artifact of the repository. Digest wins over
// semver, semver over tag (Flux's precedence).
type OCIRepositoryRef struct {
	// Digest pins the manifest, sha256:<hex>.
	// +optional
	// +kubebuilder:validation:Pattern="^sha256:[a-f0-9]{64}$"
	Digest string `json:"digest,omitempty"`

	// SemVer is a range (Masterminds syntax); the highest tag in it is
	// pulled.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SemVer string `json:"semver,omitempty"`

	// SemverFilter is a regular expression: only tags matching it are
	// considered for spec.ref.semver.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SemverFilter string `json:"semverFilter,omitempty"`

	// Tag is the tag to pull.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern="^[a-zA-Z0-9_][a-zA-Z0-9._-]*$"
	Tag string `json:"tag,omitempty"`
}

// OCIRepositoryVerification says which signatures an artifact needs.
// Keyless cosign (Flux's matchOIDCIdentity) is not implemented, so it is
// not in the CRD (docs/api/ocirepository.md).
type OCIRepositoryVerification struct {
	// Provider of the signatures: cosign or notation.
	// +optional
	// +kubebuilder:default:=cosign
	// +kubebuilder:validation:Enum=cosign;notation
	Provider string `json:"provider,omitempty"`

	// SecretRef names a Secret in the same namespace with what is trusted.
	// cosign: the data keys ending in .pub hold public keys (PEM), and a
	// signature by any of them is trusted. notation: trustpolicy.json is
	// the trust policy, and the values of keys ending in .crt or .pem are
	// the certificates of its trust stores.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// GetProvider returns spec.verify.provider, cosign when unset.
func (in *OCIRepositoryVerification) GetProvider() string {
	if in.Provider == "" {
		return OCIVerifyCosign
	}
	return in.Provider
}

// OCILayerSelector picks the layer of the artifact that holds the content.
type OCILayerSelector struct {
	// MediaType of the layer; the first layer with it is used. Unset: the
	// first layer.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MediaType string `json:"mediaType,omitempty"`

	// Operation: extract (unpack and repack, spec.ignore applies) or copy
	// (store the layer unchanged).
	// +optional
	// +kubebuilder:validation:Enum=extract;copy
	Operation string `json:"operation,omitempty"`
}

// OCIRepositoryStatus is what source-controller observed and produced.
type OCIRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, ArtifactInStorage,
	// SourceVerified (with spec.verify).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the stored content of the pulled layer; its revision is
	// <tag>@sha256:<manifest digest>, or sha256:<manifest digest> for a
	// digest reference.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// ObservedLayerSelector is the layer selector the artifact was built
	// with.
	// +optional
	ObservedLayerSelector *OCILayerSelector `json:"observedLayerSelector,omitempty"`

	// ObservedIgnore is the spec.ignore the artifact was built with.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// OCIRepository is an artifact in an OCI registry: source-controller pulls
// the layer spec.ref and spec.layerSelector name and serves it as a
// digest-addressed tar.gz artifact.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocirepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OCIRepositorySpec   `json:"spec,omitempty"`
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// OCIRepositoryList is a list of OCIRepository.
// +kubebuilder:object:root=true
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIRepository `json:"items"`
}

// GetConditions returns the status conditions.
func (in *OCIRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *OCIRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns the bound for registry requests, 60s when unset.
func (in *OCIRepository) GetTimeout() metav1.Duration {
	if in.Spec.Timeout == nil {
		return metav1.Duration{Duration: 60 * time.Second}
	}
	return *in.Spec.Timeout
}

// LayerOperation returns spec.layerSelector.operation, extract when unset.
func (in *OCIRepository) LayerOperation() string {
	if s := in.Spec.LayerSelector; s != nil && s.Operation != "" {
		return s.Operation
	}
	return OCILayerExtract
}

// GetObservedGeneration returns status.observedGeneration.
func (in *OCIRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *OCIRepository) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *OCIRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *OCIRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
