// Package renderplugin is the protocol between render-controller and a
// config-management plugin (Argo CD's "CMP"): a program in a sidecar
// container of render-controller's Pod that turns a source tree into
// Kubernetes manifests, for tools Plumb does not build in (cdk8s, Tanka,
// kpt functions, a team's own script). docs/design/plugins.md is the guide
// for operators and plugin authors; this is the wire format.
//
// # Finding a plugin
//
// Each plugin listens on a unix socket named <name>.sock in a folder both
// containers share (an emptyDir; render-controller's --plugin-dir). There
// is nothing else to declare: the socket is the declaration, and the
// plugin says what it takes:
//
//	GET /v1/plugin  →  200 application/json  Info
//
// Info.Version is the plugin's identity: any text of at most
// MaxVersionBytes that changes whenever the plugin may answer the same
// request differently (a release, or a digest of its program and its
// configuration; Serve defaults it to ExecutableVersion, the digest of
// the running program). render-controller keeps a render while the
// source, the spec and the versions of the plugins it may reach stay the
// same, so a plugin upgraded in place renders again without a new commit.
//
// A Kustomization may leave the plugin's name out (Argo CD's discovery):
// Client.Discover asks every socket's Info and takes the one plugin whose
// Discover.FileName matches a file in the request's path; a plugin
// without a rule is never discovered, only named. None or several
// matching is an error naming them.
//
// # A render
//
//	POST /v1/render   multipart/form-data, two parts in this order:
//	  "request"  application/json   Request (at most MaxRequestBytes)
//	  "source"   application/gzip   the source tree as a tar.gz (pkg/artifact's format)
//
// The tree is the one source artifact of the Kustomization being rendered,
// nothing else: no credentials, no other object's source. The answer is
//
//	200 application/yaml   the manifests, a multi-document YAML stream
//	4xx/5xx application/json  Failure {"error": "...", "stderr": "..."}
//
// render-controller reads at most the render's output limit of the
// manifests and MaxFailureBytes of a failure, and stops waiting at the
// render's deadline (the plugin sees its request's context end). The
// manifests then go through the same budgets, checks, canonical order and
// printing as a kustomize build (pkg/render's Budget and Assemble), inside
// a render worker.
//
// # Writing a plugin in Go
//
// Serve does the protocol: it extracts each request's tree into a fresh
// folder (pkg/artifact's safe extraction, with Limits), calls Generate,
// and removes the folder after. Command runs a program as Argo CD's
// plugins do, with the env and parameters in its environment and its
// output bounded. pkg/renderplugin/example holds two complete plugins.
package renderplugin
