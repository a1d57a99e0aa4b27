// Package oci pulls one layer of an OCI artifact with go-containerregistry,
// for source-controller's OCIRepository.
//
// Resolve turns a repository URL (oci://host/path, no tag or digest) and a
// reference into a manifest digest and a revision in Flux's format:
// "<tag>@sha256:<hex>" for a tag or a semver range (the highest tag in the
// range, among the tags matching semverFilter), "sha256:<hex>" for a
// digest pin. The precedence is Flux's: digest, then semver, then tag, and
// the tag latest when none is set.
//
// Pull fetches the manifest by that digest, selects the first layer (or
// the first with the given media type), refuses it when its declared size
// is over the limit, and downloads it to a file through a reader that
// stops one byte past the limit, so a registry lying about the size
// cannot fill the disk. go-containerregistry checks the blob's digest as
// it is read. The caller extracts it with pkg/artifact's ExtractFile,
// which re-verifies the digest and refuses paths out of the root, links
// that leave it, special files, and archives over its limits.
//
// Credentials come from a kubernetes.io/dockerconfigjson Secret
// (.dockerconfigjson, the "auths" map, username/password or auth); the
// entry for the registry's host is used, anonymous access otherwise.
// Plain HTTP is used when insecure is set, and, as go-containerregistry
// decides for every client, for loopback, RFC 1918 and *.local hosts.
//
// Errors carry a Kind (AuthFailed, InvalidSpec, NotFound, TooLarge, NoLayer) so the
// reconciler can map them to a reason and a retry policy.
package oci
