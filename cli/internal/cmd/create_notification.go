package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// The values the notification CRDs accept (their validation enums), so
// that --export refuses what an apply would; create_test.go checks each
// list against deploy/crds.
var (
	providerTypes = []string{
		notificationv1.SlackProvider, notificationv1.GenericProvider, notificationv1.GenericHMACProvider, notificationv1.DiscordProvider,
		notificationv1.MSTeamsProvider, notificationv1.NATSProvider, notificationv1.GitHubProvider, notificationv1.GitLabProvider,
		notificationv1.GiteaProvider, notificationv1.BitbucketProvider, notificationv1.BitbucketServerProvider, notificationv1.AzureDevOpsProvider,
		notificationv1.GitHubDispatchProvider, notificationv1.AlertmanagerProvider, notificationv1.PagerDutyProvider, notificationv1.OpsgenieProvider,
		notificationv1.GrafanaProvider, notificationv1.DatadogProvider, notificationv1.SentryProvider, notificationv1.IncidentioProvider,
		notificationv1.GoogleChatProvider, notificationv1.TelegramProvider, notificationv1.MatrixProvider, notificationv1.RocketProvider,
		notificationv1.WebexProvider, notificationv1.LarkProvider, notificationv1.ZulipProvider, notificationv1.ZoomProvider,
		notificationv1.GitHubPullRequestCommentProvider, notificationv1.GitLabMergeRequestCommentProvider, notificationv1.GiteaPullRequestCommentProvider,
		notificationv1.GooglePubSubProvider, notificationv1.AzureEventHubProvider, notificationv1.OTELProvider,
	}
	receiverTypes = []string{
		notificationv1.GitHubReceiver, notificationv1.GitLabReceiver, notificationv1.BitbucketReceiver, notificationv1.GenericReceiver,
		notificationv1.GenericHMACReceiver, notificationv1.GenericOIDCReceiver, notificationv1.HarborReceiver, notificationv1.DockerHubReceiver,
		notificationv1.QuayReceiver, notificationv1.GCRReceiver, notificationv1.NexusReceiver, notificationv1.ACRReceiver, notificationv1.CDEventsReceiver,
	}
	// notificationRefKinds are the kinds an Alert's event sources and a
	// Receiver's resources may name.
	notificationRefKinds = []string{
		sourcev1.GitRepositoryKind, sourcev1.HelmRepositoryKind, sourcev1.HelmChartKind, sourcev1.OCIRepositoryKind, sourcev1.BucketKind,
		kustomizev1.KustomizationKind, helmv2.HelmReleaseKind,
		notificationv1.ReceiverKind, notificationv1.AlertKind, notificationv1.ProviderKind,
		imagev1.ImageRepositoryKind, imagev1.ImagePolicyKind, imagev1.ImageUpdateAutomationKind,
		setv1.ObjectSetKind,
	}
)

// notificationRefs reads --event-source or --resource values,
// <kind>/<name>[.<namespace>], the name "*" for every object of the kind.
func notificationRefs(flag string, in []string) ([]notificationv1.CrossNamespaceObjectReference, error) {
	var out []notificationv1.CrossNamespaceObjectReference
	for _, v := range in {
		r, err := parseRef(flag, v, "", notificationRefKinds)
		if err != nil {
			return nil, err
		}
		out = append(out, notificationv1.CrossNamespaceObjectReference{Kind: r.kind, Name: r.name, Namespace: r.namespace})
	}
	return out, nil
}

func newCreateAlertCmd(o *createOpts) *cobra.Command {
	var providerRef, severity string
	var sources []string
	c := o.leaf("alert", "Create or update an Alert",
		"  plumb create alert podinfo --provider-ref=slack --event-severity=error --event-source=Kustomization/podinfo,GitRepository/*",
		func(t target) (built, error) {
			if err := o.noInterval(notificationv1.AlertKind); err != nil {
				return built{}, err
			}
			if providerRef == "" {
				return built{}, errRequired("provider-ref")
			}
			if len(sources) == 0 {
				return built{}, errors.New("at least one --event-source is required")
			}
			if severity != "" {
				if err := oneOf("event-severity", severity, []string{"info", "error"}); err != nil {
					return built{}, err
				}
			}
			refs, err := notificationRefs("event-source", sources)
			if err != nil {
				return built{}, err
			}
			a := &notificationv1.Alert{
				ObjectMeta: objectMeta(t),
				Spec: notificationv1.AlertSpec{
					ProviderRef: meta.LocalObjectReference{Name: providerRef}, EventSeverity: severity, EventSources: refs,
				},
			}
			return built{objs: []client.Object{a}, wait: alertKind}, nil
		})
	f := c.Flags()
	f.StringVar(&providerRef, "provider-ref", "", "Name of the Provider to send to.")
	f.StringVar(&severity, "event-severity", "", "Least severity of the events sent: info (all) or error.")
	f.StringSliceVar(&sources, "event-source", nil, "Objects whose events are sent, <kind>/<name>[.<namespace>], name * for all (several: repeat or separate with commas).")
	return c
}

func newCreateAlertProviderCmd(o *createOpts) *cobra.Command {
	var typ, channel, username, address, secretRef string
	c := o.leaf("alert-provider", "Create or update a Provider (where Alerts send)",
		"  plumb create alert-provider slack --type=slack --channel=general --secret-ref=slack-url\n"+
			"  plumb create alert-provider github --type=github --address=https://github.com/org/repo --secret-ref=github-token",
		func(t target) (built, error) {
			if err := o.noInterval(notificationv1.ProviderKind); err != nil {
				return built{}, err
			}
			if typ == "" {
				return built{}, errRequired("type")
			}
			if err := oneOf("type", typ, providerTypes); err != nil {
				return built{}, err
			}
			p := &notificationv1.Provider{
				ObjectMeta: objectMeta(t),
				Spec: notificationv1.ProviderSpec{
					Type: typ, Channel: channel, Username: username, Address: address, SecretRef: localRef(secretRef),
				},
			}
			return built{objs: []client.Object{p}, wait: providerKind}, nil
		})
	f := c.Flags()
	f.StringVar(&typ, "type", "", "Provider type: "+strings.Join(providerTypes, ", ")+".")
	f.StringVar(&channel, "channel", "", "Channel to post to (chat providers).")
	f.StringVar(&username, "username", "", "Name the messages are posted as (chat providers).")
	f.StringVar(&address, "address", "", "Webhook, API or repository address.")
	f.StringVar(&secretRef, "secret-ref", "", "Name of the Secret with the token or address.")
	return c
}

func newCreateReceiverCmd(o *createOpts) *cobra.Command {
	var typ, secretRef string
	var events, resources []string
	c := o.leaf("receiver", "Create or update a Receiver (a webhook that asks for reconciles)",
		"  plumb create receiver github --type=github --event=ping,push --secret-ref=github-hook --resource=GitRepository/podinfo",
		func(t target) (built, error) {
			if err := o.noInterval(notificationv1.ReceiverKind); err != nil {
				return built{}, err
			}
			if typ == "" {
				return built{}, errRequired("type")
			}
			if err := oneOf("type", typ, receiverTypes); err != nil {
				return built{}, err
			}
			if typ == notificationv1.GenericOIDCReceiver {
				return built{}, fmt.Errorf("a generic-oidc Receiver needs spec.oidcProviders, which no flag sets: write it as YAML")
			}
			if secretRef == "" {
				return built{}, errRequired("secret-ref")
			}
			if len(resources) == 0 {
				return built{}, errors.New("at least one --resource is required")
			}
			refs, err := notificationRefs("resource", resources)
			if err != nil {
				return built{}, err
			}
			r := &notificationv1.Receiver{
				ObjectMeta: objectMeta(t),
				Spec: notificationv1.ReceiverSpec{
					Type: typ, Events: events, Resources: refs, SecretRef: localRef(secretRef),
				},
			}
			return built{objs: []client.Object{r}, wait: receiverKind}, nil
		})
	f := c.Flags()
	f.StringVar(&typ, "type", "", "Receiver type: "+strings.Join(receiverTypes, ", ")+".")
	f.StringVar(&secretRef, "secret-ref", "", "Name of the Secret with the token (plumb create secret receiver).")
	f.StringSliceVar(&events, "event", nil, "Sender's event types to act on, e.g. push (github, gitlab, bitbucket, cdevents; several: repeat or separate with commas).")
	f.StringSliceVar(&resources, "resource", nil, "Objects to reconcile, <kind>/<name>[.<namespace>] (several: repeat or separate with commas).")
	return c
}
