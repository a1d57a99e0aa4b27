// Package pullrequest lists the open pull requests of a repository on
// GitHub (REST v3), GitLab (REST v4, merge requests) or Gitea (REST v1),
// for the pullRequests generator of ObjectSets.
//
// Everything an answer holds comes from a server the set's author names,
// so a listing is bounded on every side:
//
//   - connections go only where a netguard.Policy allows (egress.Transport:
//     judged at dial time, no link-local or metadata address ever, loopback
//     and private ranges only when the operator allows them);
//   - each request ends after RequestTimeout, and the answer's body is read
//     up to Limits.MaxPageBytes: a larger page is an error, not a
//     truncated list;
//   - at most Limits.MaxPages pages are read and Limits.MaxPullRequests
//     pull requests kept; a host that pages on past either is an error;
//   - a page link (GitHub's Link header) and a redirect must stay on the
//     API's scheme and host, so a token is never sent anywhere else, and a
//     token is sent only over HTTPS;
//   - an answer that is not a success is quoted by its excerpt
//     (egress.Excerpts), never in full.
//
// The clients are net/http and encoding/json rather than go-github,
// go-gitlab and Gitea's SDK: each listing is one GET with two or three
// query parameters and five or six fields read, none of those modules is
// in the workspace, and each brings a large tree of its own while giving
// no say over how much of an answer it reads.
package pullrequest
