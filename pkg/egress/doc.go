// Package egress is the HTTP side of connecting to servers that users'
// objects name (Git hosts, chart repositories, registries, S3 servers),
// shared by source-controller and image-controller:
//
//   - Transport is net/http's default transport whose dialer judges every
//     address it connects to with a plumb.dev/pkg/netguard Policy, at
//     dial time, so redirects and names that resolve elsewhere later are
//     judged as the first request is.
//   - Excerpts replaces the body of every answer that is not a success by
//     message.Excerpt of its first MaxErrorBodyBytes, before a client
//     library quotes it into an error, and so into a condition or event.
//
// Which networks a program allows (its --allowed-private-networks flag)
// is the program's: source-controller/internal/egress builds its Policy.
package egress
