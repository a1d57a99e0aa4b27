package v1

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// BucketKind is the kind name of Bucket.
const BucketKind = "Bucket"

// Providers of spec.provider that Plumb implements. Flux's gcp and azure
// (and aws without static credentials: its workload identity) need their
// SDKs and cloud identities; the CRD refuses them.
const (
	// BucketProviderGeneric is any S3-compatible object storage, with the
	// static credentials of spec.secretRef or anonymous.
	BucketProviderGeneric = "generic"
	// BucketProviderAmazon is AWS S3 with the static credentials of
	// spec.secretRef: the same S3 client as generic.
	BucketProviderAmazon = "aws"
)

// Condition and event reasons specific to Bucket (the shared ones are in
// api/meta and gitrepository_types.go; docs/api/bucket.md lists them all).
const (
	// BucketOperationFailedReason: listing or downloading the bucket's
	// objects failed (network, the server's error answer, no such
	// bucket), as Flux names it.
	BucketOperationFailedReason = "BucketOperationFailed"
)

// Data keys of a Bucket's spec.secretRef, as Flux names them.
const (
	BucketAccessKeyKey = "accesskey"
	BucketSecretKeyKey = "secretkey"
)

// BucketSpec says which bucket to fetch and how often.
// +kubebuilder:validation:XValidation:rule="self.provider in ['generic', 'aws']",message="spec.provider: only generic and aws (with the static credentials of spec.secretRef) are implemented; gcp and azure are not"
// +kubebuilder:validation:XValidation:rule="self.provider != 'aws' || has(self.secretRef)",message="spec.provider aws needs spec.secretRef with accesskey and secretkey: AWS workload identity and instance credentials are not implemented"
// +kubebuilder:validation:XValidation:rule="!has(self.sts)",message="spec.sts is not implemented: use the static credentials of spec.secretRef"
type BucketSpec struct {
	// Provider of the object storage: generic (any S3-compatible server)
	// or aws (S3 with static credentials). gcp and azure are refused.
	// +optional
	// +kubebuilder:default:=generic
	// +kubebuilder:validation:Enum=generic;aws;gcp;azure
	Provider string `json:"provider,omitempty"`

	// BucketName is the name of the bucket.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	BucketName string `json:"bucketName"`

	// Endpoint is the object storage's address, host[:port], without a
	// scheme (spec.insecure chooses plain HTTP).
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^(\\\\[[0-9a-fA-F:.]+\\\\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?$')",message="spec.endpoint is host[:port], without a scheme, path or credentials (spec.insecure chooses http)"
	Endpoint string `json:"endpoint"`

	// STS is Flux's Security Token Service configuration. It is not
	// implemented: it is in the schema only so that the API server refuses
	// it with a message instead of dropping it.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	STS *apiextensionsv1.JSON `json:"sts,omitempty"`

	// Insecure allows plain HTTP to the endpoint.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Region of the endpoint where the bucket is; the server's answer
	// decides when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// Prefix lists only the objects whose keys start with it (server-side
	// filtering); the keys keep it in the artifact.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Prefix string `json:"prefix,omitempty"`

	// SecretRef names a Secret in the same namespace with the static
	// credentials in the keys accesskey and secretkey; anonymous when
	// unset.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with a CA
	// certificate (ca.crt) to trust and/or a client certificate and key
	// (tls.crt, tls.key) for the HTTPS connection.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with the proxy
	// to connect through: address, and optional username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Interval between two listings of the bucket.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds the listing and downloads of one reconcile.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore holds ignore rules in gitignore syntax, applied on top of the
	// bucket's root .sourceignore to the object keys; it replaces the
	// default exclusions.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BucketStatus is what source-controller observed and produced.
type BucketStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed,
	// ArtifactInStorage.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the stored content of the bucket's objects; its revision
	// is sha256:<hex> of the index of their keys and ETags.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// ObservedIgnore is the spec.ignore the artifact was built with.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Bucket is the objects of an S3-compatible bucket: source-controller
// lists them, downloads those that spec.prefix and the ignore rules keep,
// and serves them as a tar.gz artifact.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BucketSpec   `json:"spec,omitempty"`
	Status BucketStatus `json:"status,omitempty"`
}

// BucketList is a list of Bucket.
// +kubebuilder:object:root=true
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

// GetConditions returns the status conditions.
func (in *Bucket) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Bucket) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns the bound of one reconcile's requests, 60s when
// unset.
func (in *Bucket) GetTimeout() metav1.Duration {
	if in.Spec.Timeout == nil {
		return metav1.Duration{Duration: 60 * time.Second}
	}
	return *in.Spec.Timeout
}

// GetObservedGeneration returns status.observedGeneration.
func (in *Bucket) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Bucket) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *Bucket) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Bucket) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
