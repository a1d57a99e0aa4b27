// Package egress is how source-controller connects to the servers its
// objects name — Git hosts, Helm chart repositories, OCI registries, S3
// servers — on behalf of whoever wrote the object. The address and the
// answers are the remote's choice, so:
//
//   - Every connection goes through a dialer that judges the address it is
//     about to connect to with pkg/netguard (Policy): link-local and cloud
//     metadata addresses always refused, loopback and private ones unless
//     listed in --allowed-private-networks. The check is made at dial time,
//     on the resolved address, so a name that resolves elsewhere later (DNS
//     rebinding) and every host the remote chooses — a redirect, a chart
//     URL of an index, a blob redirect to a CDN, the token realm of a
//     registry's WWW-Authenticate challenge — are judged as the first
//     request is. Through a proxy (the environment's, or a GitRepository's
//     spec.proxySecretRef) the proxy's address is judged and the proxy
//     connects to the rest.
//   - The body of every answer that is not a success is read to at most
//     MaxErrorBodyBytes and replaced by message.Excerpt of it (Excerpts),
//     before go-git, the Helm SDK, oras-go or go-containerregistry read it:
//     whatever they quote of it in an error, and so in a condition, an
//     event or an alert, is a short line of printable text.
//
// SSH connections to Git hosts cannot be given a dialer through go-git;
// source-controller/internal/git resolves and checks the host itself and
// connects to the address it checked.
//
// The transport and the excerpts are plumb.dev/pkg/egress's, which
// image-controller shares; this package adds source-controller's Policy.
package egress
