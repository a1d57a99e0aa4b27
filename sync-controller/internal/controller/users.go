package controller

import "plumb.dev/pkg/manage"

// users records what each Kustomization or HelmRelease uses of something
// kept for several of them — a ServiceAccount's client (Impersonator), a
// remote cluster's connection (remoteClusters) — so that what none uses
// any more can be dropped.
type users[K comparable] map[manage.Owner]K

// drop forgets what owner used, and reports it and whether owner was its
// last user.
func (u users[K]) drop(owner manage.Owner) (key K, last bool) {
	key, ok := u[owner]
	if !ok {
		return key, false
	}
	delete(u, owner)
	for _, other := range u {
		if other == key {
			return key, false
		}
	}
	return key, true
}
