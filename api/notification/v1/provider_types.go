package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ProviderKind is the kind name of Provider.
const ProviderKind = "Provider"

// Provider types.
const (
	SlackProvider       = "slack"
	GenericProvider     = "generic"
	GenericHMACProvider = "generic-hmac"
	DiscordProvider     = "discord"
	MSTeamsProvider     = "msteams"
	NATSProvider        = "nats"

	// Commit statuses: the outcome posted to the commit of the event's
	// revision.
	GitHubProvider          = "github"
	GitLabProvider          = "gitlab"
	GiteaProvider           = "gitea"
	BitbucketProvider       = "bitbucket"
	BitbucketServerProvider = "bitbucketserver"
	AzureDevOpsProvider     = "azuredevops"
	GitHubDispatchProvider  = "githubdispatch"

	// Change request comments: one comment per object on the pull or
	// merge request its event.toolkit.fluxcd.io/change_request
	// annotation names, edited on each event.
	GitHubPullRequestCommentProvider  = "githubpullrequestcomment"
	GitLabMergeRequestCommentProvider = "gitlabmergerequestcomment"
	GiteaPullRequestCommentProvider   = "giteapullrequestcomment"

	// Paging and incident tools.
	AlertmanagerProvider = "alertmanager"
	PagerDutyProvider    = "pagerduty"
	OpsgenieProvider     = "opsgenie"
	GrafanaProvider      = "grafana"
	DatadogProvider      = "datadog"
	SentryProvider       = "sentry"
	IncidentioProvider   = "incident.io"
	// OTELProvider sends each event as a span of an OpenTelemetry trace.
	OTELProvider = "otel"

	// Chat services besides Slack, Discord and Teams.
	GoogleChatProvider = "googlechat"
	TelegramProvider   = "telegram"
	MatrixProvider     = "matrix"
	RocketProvider     = "rocket"
	WebexProvider      = "webex"
	LarkProvider       = "lark"
	ZulipProvider      = "zulip"
	ZoomProvider       = "zoom"

	// Cloud message buses: the event JSON published to a Google Pub/Sub
	// topic or sent to an Azure Event Hub. Their address is no URL (a
	// project ID; a connection string or an event hub's name).
	GooglePubSubProvider  = "googlepubsub"
	AzureEventHubProvider = "azureeventhub"
)

// ProviderSpec says where and how alerts are delivered.
// +kubebuilder:validation:XValidation:rule="!has(self.address) || size(self.address) == 0 || self.type in ['googlepubsub', 'azureeventhub'] || self.address.matches('^(http|https|nats|tls)://.*$')",message="address must be an http(s):// URL, or a nats:// or tls:// URL for type nats",fieldPath=".address"
// +kubebuilder:validation:XValidation:rule="self.type != 'googlepubsub' || (has(self.channel) && size(self.channel) > 0)",message="a googlepubsub provider needs spec.channel, the Pub/Sub topic ID"
// +kubebuilder:validation:XValidation:rule="self.type != 'azureeventhub' || !has(self.address) || !self.address.contains('SharedAccessKey')",message="an azureeventhub connection string holds a key: put it in the key address of spec.secretRef, and leave spec.address empty",fieldPath=".address"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['googlepubsub', 'azureeventhub']) || has(self.secretRef)",message="googlepubsub and azureeventhub providers need spec.secretRef with their credentials (Plumb has no workload identity): a service account's JSON key in token for googlepubsub; an Event Hubs connection string in address, or an access token in token, for azureeventhub"
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-hmac' || has(self.secretRef)",message="a generic-hmac provider needs spec.secretRef with the signing token"
// +kubebuilder:validation:XValidation:rule="self.type != 'nats' || (has(self.channel) && size(self.channel) > 0)",message="a nats provider needs spec.channel, the subject to publish on"
// +kubebuilder:validation:XValidation:rule="self.type != 'pagerduty' || (has(self.channel) && size(self.channel) > 0)",message="a pagerduty provider needs spec.channel, the routing key of an Events API v2 integration"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['opsgenie', 'datadog']) || has(self.secretRef)",message="opsgenie and datadog providers need spec.secretRef with the API key in its key token"
// +kubebuilder:validation:XValidation:rule="self.type != 'sentry' || (has(self.secretRef) && (!has(self.address) || size(self.address) == 0))",message="a sentry provider's address is its DSN, a credential: put it in the key address of spec.secretRef, and leave spec.address empty"
// +kubebuilder:validation:XValidation:rule="!has(self.commitStatusExpr) || self.type in ['github', 'gitlab', 'gitea', 'bitbucket', 'bitbucketserver', 'azuredevops']",message="spec.commitStatusExpr is only supported for the 'github', 'gitlab', 'gitea', 'bitbucketserver', 'bitbucket', 'azuredevops' provider types"
// +kubebuilder:validation:XValidation:rule="self.type != 'nats' || !has(self.proxySecretRef)",message="spec.proxySecretRef is for HTTP providers: a nats provider connects to its server directly"
// +kubebuilder:validation:XValidation:rule="!has(self.threadPerObject) || !self.threadPerObject || self.type in ['slack', 'googlechat', 'zulip']",message="spec.threadPerObject is for types slack (with a bot token), googlechat and zulip"
type ProviderSpec struct {
	// Type of the provider.
	// +required
	// +kubebuilder:validation:Enum=slack;generic;generic-hmac;discord;msteams;nats;github;gitlab;gitea;bitbucket;bitbucketserver;azuredevops;githubdispatch;alertmanager;pagerduty;opsgenie;grafana;datadog;sentry;incident.io;googlechat;telegram;matrix;rocket;webex;lark;zulip;zoom;githubpullrequestcomment;gitlabmergerequestcomment;giteapullrequestcomment;googlepubsub;azureeventhub;otel
	Type string `json:"type"`

	// Channel to post to: the Slack channel, the NATS subject, or a chat
	// service's room, chat or stream (its form per type in
	// docs/api/provider.md).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Channel string `json:"channel,omitempty"`

	// Username shown as the sender, where the provider supports one.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Username string `json:"username,omitempty"`

	// Address is the webhook URL, or the NATS server URL for type nats;
	// for googlepubsub the GCP project ID, for azureeventhub an Event
	// Hubs connection string or the event hub's name (which is why the
	// URL rule is the spec's, by type). The Secret's "address" key
	// overrides it.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Address string `json:"address,omitempty"`

	// Timeout of one delivery attempt; notification-controller's
	// --max-provider-timeout caps it.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SecretRef names a Secret with the keys "address" and/or "token"
	// (the HMAC key for generic-hmac, a bearer token otherwise, NATS
	// credentials for type nats).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with the TLS material for connections to
	// the provider: "ca.crt", the CA that signed its server certificate
	// (it replaces the system roots), and "tls.crt" with "tls.key", a
	// client certificate (mutual TLS). Flux's legacy keys "caFile",
	// "certFile" and "keyFile" are read when the new ones are absent.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the HTTP(S) proxy deliveries go
	// through: "address" (an http:// or https:// URL), and optionally
	// "username" and "password". It replaces the proxy of
	// notification-controller's environment (HTTPS_PROXY), and the
	// address policy then applies to the proxy's address. Not for type
	// nats.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Insecure allows sending credentials over a connection without TLS:
	// an address with user info or from the Secret, a token, headers or
	// NATS credentials, to an http:// address or a NATS server that does
	// not offer TLS. Without it such a Provider is not Ready.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// ThreadPerObject groups the messages about one object: a Slack thread
	// (type slack with a bot token: the first message about an object
	// starts it, later ones reply in it; remembered in memory, so threads
	// start anew after notification-controller restarts), a Google Chat
	// thread (googlechat), a Zulip topic named after the object (zulip).
	// +optional
	ThreadPerObject bool `json:"threadPerObject,omitempty"`

	// CommitStatusExpr is a CEL expression that gives the name of the
	// commit status (GitHub's and Gitea's context, GitLab's name,
	// Bitbucket's key, Azure DevOps' genre/name) instead of
	// kind/namespace/name/<provider UID prefix>, from the variables
	// event (the event as its JSON reads, the Alert's eventMetadata in
	// event.metadata), alert and provider (the objects). For types
	// github, gitlab, gitea, bitbucket, bitbucketserver and azuredevops.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	CommitStatusExpr string `json:"commitStatusExpr,omitempty"`

	// Suspend stops deliveries through this provider while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Provider is a destination for alerts.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderSpec `json:"spec,omitempty"`
	Status Status       `json:"status,omitempty"`
}

// ProviderList is a list of Provider.
// +kubebuilder:object:root=true
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

// GetConditions returns the status conditions.
func (in *Provider) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Provider) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns the delivery timeout, 15s when unset.
func (in *Provider) GetTimeout() metav1.Duration {
	if in.Spec.Timeout == nil {
		return metav1.Duration{Duration: 15_000_000_000}
	}
	return *in.Spec.Timeout
}

// GetObservedGeneration returns status.observedGeneration.
func (in *Provider) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Provider) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }
