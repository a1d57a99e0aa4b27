// Package netguard decides which IP addresses a controller may connect to
// on behalf of a tenant: a Provider's webhook address (notification-
// controller), a kubeconfig's server (sync-controller's remote clusters).
// Both are written by whoever may create the object, so an address that
// reaches the node's or the cloud's own services — instance metadata and
// its credentials above all — is refused.
//
// The decision is made in the dialer's Control function, on the resolved
// address the connection is about to use, so a name that resolves to a
// refused address is refused whatever it resolved to before (no DNS
// rebinding). Go's net/netip classifies the ranges; the metadata addresses
// outside link-local are listed here, as no library of the ecosystem keeps
// that list.
package netguard
