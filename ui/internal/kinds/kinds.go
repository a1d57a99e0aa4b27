// Package kinds is the UI's one table of the Plumb kinds it shows: the
// lower-case singular name routes use (docs/design/ui.md), the Kind, its
// API group and resource (for access reviews) and how to make an empty
// object of it. Every other package of the UI looks a kind up here rather
// than spelling its group or resource again. Discovered finds any other
// kind (a Deployment a Kustomization applied) by its Kind alone, from the
// API server's discovery, for the names on the event stream that carry no
// API group.
package kinds

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// Kind is one kind the UI shows.
type Kind struct {
	// Route is the name in URLs: "kustomization".
	Route string
	// GVK is the kind's group, version and Kind ("Kustomization").
	GVK schema.GroupVersionKind
	// Resource is the plural resource name access reviews take.
	Resource  string
	newObject func() client.Object
}

// New returns an empty object of the kind.
func (k Kind) New() client.Object { return k.newObject() }

// Group is the kind's API group.
func (k Kind) Group() string { return k.GVK.Group }

// All lists the kinds in the order the overview sorts them by (their Kind
// names' order).
var All = []Kind{
	{Route: "gitrepository", GVK: sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind), Resource: "gitrepositories",
		newObject: func() client.Object { return &sourcev1.GitRepository{} }},
	{Route: "helmchart", GVK: sourcev1.GroupVersion.WithKind(sourcev1.HelmChartKind), Resource: "helmcharts",
		newObject: func() client.Object { return &sourcev1.HelmChart{} }},
	{Route: "helmrelease", GVK: helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind), Resource: "helmreleases",
		newObject: func() client.Object { return &helmv2.HelmRelease{} }},
	{Route: "helmrepository", GVK: sourcev1.GroupVersion.WithKind(sourcev1.HelmRepositoryKind), Resource: "helmrepositories",
		newObject: func() client.Object { return &sourcev1.HelmRepository{} }},
	{Route: "kustomization", GVK: kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind), Resource: "kustomizations",
		newObject: func() client.Object { return &kustomizev1.Kustomization{} }},
}

// Notification are notification-controller's kinds: not in the overview,
// but events on the stream are about them too, and showing one takes the
// same access review.
var Notification = []Kind{
	{Route: "alert", GVK: notificationv1.GroupVersion.WithKind(notificationv1.AlertKind), Resource: "alerts",
		newObject: func() client.Object { return &notificationv1.Alert{} }},
	{Route: "provider", GVK: notificationv1.GroupVersion.WithKind(notificationv1.ProviderKind), Resource: "providers",
		newObject: func() client.Object { return &notificationv1.Provider{} }},
	{Route: "receiver", GVK: notificationv1.GroupVersion.WithKind(notificationv1.ReceiverKind), Resource: "receivers",
		newObject: func() client.Object { return &notificationv1.Receiver{} }},
}

// Lookup finds one of the five kinds by its route name or its Kind, in
// any case ("kustomization", "Kustomization").
func Lookup(name string) (Kind, bool) {
	return find(All, name)
}

// LookupAny finds any Plumb kind, notification-controller's too.
func LookupAny(name string) (Kind, bool) {
	if k, ok := find(All, name); ok {
		return k, true
	}
	return find(Notification, name)
}

func find(list []Kind, name string) (Kind, bool) {
	for _, k := range list {
		if strings.EqualFold(name, k.Route) || strings.EqualFold(name, k.GVK.Kind) {
			return k, true
		}
	}
	return Kind{}, false
}
