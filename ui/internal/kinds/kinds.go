// Package kinds is the UI's view of Plumb's kinds (pkg/kinds): which of
// them the overview shows, found by the lower-case singular name routes
// use (docs/design/ui.md) or their Kind. Every other package of the UI
// looks a kind up here rather than spelling its group or resource again.
// Discovered finds any other kind (a Deployment a Kustomization applied)
// by its Kind alone, from the API server's discovery, for the names on the
// event stream that carry no API group.
package kinds

import (
	"strings"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/kinds"
)

// Kind is one of Plumb's kinds, as pkg/kinds describes it.
type Kind = kinds.Kind

// All lists the kinds the overview shows, in the order it sorts them by
// (their Kind names'): every kind source-, render-, sync- and
// image-controller reconcile. The UI's ServiceAccount (deploy/components/ui)
// may get, list and watch each of them, for the overview's informers.
var All = kinds.Where(func(k kinds.Kind) bool {
	return len(k.Controllers) > 0 && k.GVK.Group != notificationv1.GroupVersion.Group
})

// Notification are notification-controller's kinds: not in the overview,
// but events on the stream are about them too, and showing one takes the
// same access review.
var Notification = kinds.Where(func(k kinds.Kind) bool { return k.GVK.Group == notificationv1.GroupVersion.Group })

// Lookup finds one of the overview's kinds by its route name or its Kind,
// in any case ("kustomization", "Kustomization").
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
		if strings.EqualFold(name, k.Route()) || strings.EqualFold(name, k.GVK.Kind) {
			return k, true
		}
	}
	return Kind{}, false
}
