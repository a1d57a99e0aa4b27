// Package registry lists the tags of an image repository and reads the
// digest of one tag, for image-controller, from a registry the
// ImageRepository's author chose. The registry's address and its answers
// are that author's, so everything read is bounded and every connection
// is fenced the way source-controller's are:
//
//   - Connections: every dial is judged by pkg/netguard on the resolved
//     address (Options.Addresses, --allowed-private-networks): link-local
//     and cloud metadata addresses always refused, loopback and private
//     ones unless allowed. A redirect, the token realm of a
//     WWW-Authenticate challenge and a DNS name that resolves elsewhere
//     later are judged as the first request is.
//   - Tags: the list is read a page at a time (the distribution API's
//     Link header) and refused whole (TooManyTags, reason
//     TagLimitExceeded) past Limits.MaxTags tags or Limits.MaxPages
//     pages, so a registry that lists without end is not read to its
//     end. Each page's body is cut at Limits.MaxPageBytes: a longer one
//     fails the scan rather than filling memory.
//   - Errors: the body of every answer that is not a success is read to
//     at most 16 KiB and replaced by message.Excerpt of it, so what
//     go-containerregistry quotes in an error, and so in a condition or
//     an event, is a short line of printable text.
//   - Time: the caller's context bounds the whole scan (spec.timeout).
//   - Credentials: a kubernetes.io/dockerconfigjson Secret's entry for the
//     registry's host, sent over HTTPS only unless spec.insecure says
//     otherwise (go-containerregistry would fall back to plain HTTP for a
//     loopback or private registry on its own).
package registry
