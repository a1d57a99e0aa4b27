// Package bucket fetches the objects of an S3-compatible bucket for
// source-controller's Bucket: it lists them, keeps those that the prefix
// and the ignore rules keep, computes Flux's revision of them, and
// downloads them into a folder that pkg/artifact packs like a Git
// checkout.
//
// # Revision
//
// The revision is Flux's: "sha256:<hex>" of the index of the kept objects,
// one line "<key> <etag>\n" per object in the order of their keys (the
// ETag as the server lists it, without quotes). The same objects give the
// same revision, so a listing that finds nothing new downloads nothing,
// and a Bucket moved from Flux keeps its revision. Each object is
// downloaded with If-Match on the ETag it was listed with: an object that
// changed between the listing and its download fails the fetch instead of
// ending up in an artifact whose revision says otherwise.
//
// # Ignore rules
//
// Keys are matched as paths: spec.ignore when set, the default exclusions
// of pkg/artifact otherwise, and above those the rules of the bucket's
// root .sourceignore object (downloaded first, at most MaxIgnoreFileBytes;
// it is not part of the index nor of the artifact, as in Flux). Keys that
// end in "/" are folder markers and skipped.
//
// # The server is untrusted
//
//   - Every connection goes through source-controller/internal/egress: the
//     address policy (--allowed-private-networks) judges each address at
//     dial time, the proxy's too, and an error answer's body is cut to an
//     excerpt before minio-go reads it. The error text Fetch returns quotes
//     the server's code and message as excerpts only.
//   - Limits bound a fetch: the number of kept objects (the listing stops
//     one past it), the size of each and their total (refused from the
//     listed sizes before any download, and enforced again while reading,
//     one byte past the listed size, so a server lying about sizes cannot
//     fill the disk), each listing page's answer (MaxListPageBytes), and
//     the caller's context (spec.timeout).
//   - A key must be a relative path of plain elements: no empty element,
//     no "." or "..", no backslash or NUL; any other key refuses the
//     fetch (ErrUnsafeKey) rather than being written somewhere else.
//     Files are created with O_EXCL in a folder this package made, so
//     nothing the server names is followed.
//
// # Why minio-go
//
// github.com/minio/minio-go/v7 is a small S3 client: signature V4, path-
// and virtual-host-style addressing, listing and downloads, static
// credentials, an http.RoundTripper of the caller's. Compiled alone it
// pulls 43 non-standard packages; the AWS SDK's S3 client with its config
// loader (aws-sdk-go-v2/service/s3 and /config) pulls 98, for credential
// chains, endpoint rules and services Plumb does not use. Flux's generic
// provider uses minio-go as well.
package bucket
