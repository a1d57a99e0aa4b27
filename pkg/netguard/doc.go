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
//
// An IPv6 address may carry an IPv4 address that a translator or relay
// connects to on its behalf: ::a.b.c.d (IPv4-compatible), ::ffff:a.b.c.d
// (mapped), ::ffff:0:a.b.c.d (translated), 64:ff9b::/96 (NAT64),
// 64:ff9b:1::/48 (local-use NAT64, read at every position its operator's
// prefix length may put the address, and private itself), 2002::/16
// (6to4) and 2001::/32 (Teredo, server and client). Each carried address
// is judged as if dialed, so no form reaches loopback, metadata or a
// private range the policy refuses (embedded.go).
package netguard
