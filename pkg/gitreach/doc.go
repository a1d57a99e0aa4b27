// Package gitreach fences go-git's connections with an address policy
// (plumb.dev/pkg/netguard), for every program that fetches or pushes Git
// repositories at URLs its users wrote: source-controller's fetches and
// image-controller's pushes.
//
// go-git's transports are process-wide. Importing this package installs,
// for http:// and https://, one HTTP client whose RoundTripper is the one
// each connection puts in its context (Reach): a request without one
// fails, so nothing goes out unchecked, whichever package of the program
// calls go-git. It also stops go-git from reading ~/.ssh/config, whose
// Hostname could send an SSH connection elsewhere than the address Reach
// checked.
//
// Reach prepares one connection. For http:// and https:// its context
// carries a transport of its own (plumb.dev/pkg/egress) that connects
// only where the policy allows, judged at dial time so every redirect is
// too, trusts the CA bundle besides the system's CAs, goes through the
// proxy or else the environment's, and hands go-git error answers as
// their excerpt; go-git must then be given neither the CA bundle nor the
// proxy, or it builds a transport of its own. For ssh://, which go-git
// dials itself, Reach resolves the host, keeps the first address the
// policy allows and gives go-git a URL with that address, the host key
// still checked against known_hosts under the host's name.
//
// RefusalOf tells, from an error of a fetch or a push, whether the
// credentials were the cause (an unknown host key, a refused key or
// password), so that both programs report those as authentication
// failures in the same cases.
package gitreach
