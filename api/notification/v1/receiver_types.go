package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ReceiverKind is the kind name of Receiver.
const ReceiverKind = "Receiver"

// Receiver types.
const (
	GitHubReceiver      = "github"
	GitLabReceiver      = "gitlab"
	BitbucketReceiver   = "bitbucket"
	GenericReceiver     = "generic"
	GenericHMACReceiver = "generic-hmac"
	// GenericOIDCReceiver authenticates a call by the OpenID Connect ID
	// token it carries (Authorization: Bearer), not by a Secret.
	GenericOIDCReceiver = "generic-oidc"

	// Container registries and CDEvents.
	HarborReceiver    = "harbor"
	DockerHubReceiver = "dockerhub"
	QuayReceiver      = "quay"
	GCRReceiver       = "gcr"
	NexusReceiver     = "nexus"
	ACRReceiver       = "acr"
	CDEventsReceiver  = "cdevents"
)

// DefaultOIDCAudience is the aud a generic-oidc receiver's ID tokens must
// carry when its provider names no audience, as in Flux.
const DefaultOIDCAudience = "notification-controller"

// ReceiverSpec says which webhook calls are accepted and what they trigger.
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-oidc' || (has(self.oidcProviders) && size(self.oidcProviders) > 0)",message="a generic-oidc receiver needs at least one spec.oidcProviders entry"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || !has(self.oidcProviders) || size(self.oidcProviders) == 0",message="spec.oidcProviders is read only for type generic-oidc"
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-oidc' || !has(self.secretRef)",message="a generic-oidc receiver authenticates calls by their ID token: remove spec.secretRef"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || has(self.secretRef)",message="spec.secretRef is required for every type but generic-oidc"
// +kubebuilder:validation:XValidation:rule="self.type in ['github', 'gitlab', 'bitbucket', 'cdevents'] || !has(self.events) || size(self.events) == 0",message="spec.events filters on the sender's event type, which only github, gitlab, bitbucket and cdevents receivers can tell: remove spec.events for this type"
type ReceiverSpec struct {
	// Type of the sender, which decides how a call is verified.
	// +required
	// +kubebuilder:validation:Enum=github;gitlab;bitbucket;generic;generic-hmac;generic-oidc;harbor;dockerhub;quay;gcr;nexus;acr;cdevents
	Type string `json:"type"`

	// Events are the sender's event types that trigger (e.g. push, ping,
	// or a CDEvent type such as dev.cdevents.artifact.published.0.2.0);
	// empty accepts all. Only github, gitlab, bitbucket and cdevents
	// receivers can filter: the API server refuses spec.events on the
	// other types.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Events []string `json:"events,omitempty"`

	// Resources are the objects annotated with reconcile.plumb.dev/requestedAt
	// on a valid call. A namespace other than the Receiver's is refused
	// while notification-controller runs with --no-cross-namespace-refs.
	// +required
	// +kubebuilder:validation:MinItems=1
	Resources []CrossNamespaceObjectReference `json:"resources"`

	// ResourceFilter is a CEL expression that must give a bool: a
	// resource of spec.resources is annotated only when it gives true.
	// It reads the resource's metadata as res (res.metadata.name,
	// res.metadata.labels, res.metadata.annotations) and the call's JSON
	// body as req (an empty map when the call is not application/json);
	// a generic-oidc receiver's also the verified ID token's claims as
	// claims (declared for that type only, so other types refuse it).
	// An expression that does not compile or cannot give a bool makes the
	// Receiver not Ready (InvalidSpec); one that fails on a call answers
	// it 400 and annotates nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	ResourceFilter string `json:"resourceFilter,omitempty"`

	// SecretRef names a Secret whose "token" key signs or authenticates calls
	// and is part of the webhook path. The token must be at least 32 bytes.
	// A gcr receiver also needs the keys "email" (the push subscription's
	// service account) and "audience" (its ID tokens' audience). Required
	// for every type but generic-oidc, which refuses it.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// OIDCProviders are the issuers whose ID tokens a generic-oidc
	// receiver accepts (and only that type reads them): the entry whose
	// issuerURL equals the token's iss verifies its signature, audience
	// and lifetime, then its validations decide.
	// +optional
	// +listType=map
	// +listMapKey=issuerURL
	// +kubebuilder:validation:MaxItems=16
	OIDCProviders []OIDCProvider `json:"oidcProviders,omitempty"`

	// Suspend answers calls with 503 while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// OIDCProvider is an issuer whose ID tokens authenticate a generic-oidc
// receiver's calls.
type OIDCProvider struct {
	// IssuerURL is the issuer: its keys are found through
	// <issuerURL>/.well-known/openid-configuration, whose issuer must
	// equal it, as must a token's iss.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern="^https?://"
	IssuerURL string `json:"issuerURL"`

	// Audience is the aud a token must carry; "notification-controller"
	// when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Audience string `json:"audience,omitempty"`

	// Variables are named CEL expressions over the token's claims
	// (claims) and the variables before them (vars.<name>), evaluated in
	// order, to share parts of the validations.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Variables []OIDCVariable `json:"variables,omitempty"`

	// Validations must all give true for a call to be accepted; the
	// messages of those that give false are the answer's. At least one is
	// required: a public issuer (GitHub Actions, GitLab) signs tokens for
	// anyone on the platform, so a valid signature alone says nothing
	// about who calls. Constrain the caller's identity claims (e.g.
	// claims.repository_owner).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Validations []OIDCValidation `json:"validations"`
}

// GetAudience is the aud the provider's tokens must carry.
func (in *OIDCProvider) GetAudience() string {
	if in.Audience != "" {
		return in.Audience
	}
	return DefaultOIDCAudience
}

// OIDCVariable is a named CEL expression over a token's claims.
type OIDCVariable struct {
	// Name is the variable's name, read as vars.<name>.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-zA-Z_][a-zA-Z0-9_]*$"
	Name string `json:"name"`

	// Expression gives the variable's value; it reads claims and vars.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
}

// OIDCValidation is a CEL expression over a token's claims and variables
// that must give true.
type OIDCValidation struct {
	// Expression must give a bool; it reads claims and vars.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`

	// Message is the answer to a call for which Expression gives false.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message"`
}

// ReceiverStatus is what notification-controller observed.
type ReceiverStatus struct {
	Status `json:",inline"`

	// WebhookPath is the path to POST to: /hook/<sha256(token+name+namespace)>,
	// for generic-oidc (no token) /hook/<sha256(name+namespace)>.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`
}

// Receiver accepts webhooks from Git hosts, container registries and
// CDEvents producers, and triggers reconciles.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.status.webhookPath`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Receiver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReceiverSpec   `json:"spec,omitempty"`
	Status ReceiverStatus `json:"status,omitempty"`
}

// ReceiverList is a list of Receiver.
// +kubebuilder:object:root=true
type ReceiverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Receiver `json:"items"`
}

// GetConditions returns the status conditions.
func (in *Receiver) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Receiver) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *Receiver) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Receiver) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }
