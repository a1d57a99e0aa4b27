// Package git fetches one reference of a remote Git repository with go-git:
// it lists the remote's references (ls-remote), resolves the spec's
// reference (branch, tag, semver range over tags, any ref name, commit alone
// or on a branch) to a commit and a revision string, and checks that commit
// out into a folder, shallow (depth 1) whenever the reference allows.
//
// Revisions follow Flux's format: "<branch>@sha1:<hash>",
// "<tag>@sha1:<hash>" (also for semver), "<ref name>@sha1:<hash>" for a
// name reference, "sha1:<hash>" for a bare commit.
//
// Auth comes from a Secret's data, read by plumb.dev/pkg/gitauth (which
// image-controller shares): username and password (HTTP basic),
// bearerToken (HTTP), ca.crt (extra CA bundle for HTTPS), and for SSH
// identity (a private key, with an optional password) plus known_hosts,
// which is required: the server's host key must be listed there, an unknown
// or changed host key fails the fetch.
//
// # Credentials and plain HTTP
//
// The URL's scheme decides, as in Flux's GitRepository: an http:// URL
// sends basic auth or a bearer token in clear because it asks for plain
// HTTP; an https:// URL never does. go-git refuses a redirect from https
// to http before the request leaves, and drops credential headers when a
// redirect leaves the origin; this package classifies that refusal as
// Insecure.
//
// Every error this package returns is an *Error, and its message shows no
// URL's user info: go-git and net/http quote the URL in their errors with
// the user part (often a token) in full, so Error passes
// message.StripUserInfo.
//
// # Addresses
//
// Auth.Addresses decides where a fetch may connect
// (source-controller/internal/egress). go-git's HTTP transport is
// installed once for the process (plumb.dev/pkg/gitreach, which
// image-controller shares) and sends each request through
// the transport its fetch put in the context: the policy's dialer, the CA
// bundle, the proxy, and error answers cut to an excerpt. For SSH, which
// go-git dials itself, reach resolves the host, keeps the first address
// the policy allows and has go-git connect to it, the host key still
// checked under the host's name.
//
// # Size limit
//
// A remote repository is untrusted input, so Checkout bounds the disk it
// uses (--max-repository-size, DefaultMaxSize = 1 GiB): go-git writes the
// repository and the worktree through a filesystem that charges every byte
// written, the pack as it streams in and then each checked-out file, to one
// budget per checkout (plumb.dev/pkg/diskbudget), and refuses the first write that would pass it. The
// fetch or the checkout then fails with a TooLarge error naming the
// revision, the limit and the flag; the folder never holds more than the
// limit. Counting what reaches the disk rather than what a transport reads
// bounds HTTP and SSH alike, and also catches a small pack that inflates
// into a large tree. It does not bound what go-git keeps in memory (the
// reference advertisement, progress messages): spec.timeout does.
//
// # Submodules
//
// With CheckoutOptions.RecurseSubmodules, Checkout also checks out the
// submodules of the commit, recursively, each as a Checkout of its own
// (checkoutSubmodules): a .gitmodules URL is hostile, so only http(s) and
// ssh URLs (or relative ones) are fetched, through reach's address policy,
// within the same disk budget and context, and with the credentials only
// on the main repository's scheme, host and port (MaxSubmodules,
// MaxSubmoduleDepth, MaxGitmodulesBytes bound the rest).
//
// # Signatures
//
// ReadKeyRing parses a Secret's values as armored OpenPGP public keys, or
// SSH public keys (authorized_keys lines) for values named *.sshpub, as
// Flux does (bounded by MaxKeyRingBytes and MaxKeys, a value that is not a
// key is an error naming it); VerifyCommit and VerifyTag check, in a
// checkout made by Checkout, the signature of a commit and of the
// annotated tag a reference names (which must point to that commit), each
// by the kind of its signature (OpenPGP, or SSH through plumb.dev/pkg/sshsig),
// and return the signer's fingerprint: the OpenPGP primary key's in hex,
// the SSH key's as SHA256:base64. An unsigned commit or tag, or a
// lightweight tag, wraps ErrNotSigned. Nothing goes to the network.
//
// Errors are classified (Kind) so the reconciler can give a person a clear
// reason: authentication, reference not found, invalid spec (stalled, no
// retry helps), a repository over the size limit, an https:// remote
// redirecting to http://, or a plain Git/network failure.
package git
