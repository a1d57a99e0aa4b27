// Package cmd is the plumb command line: one cobra command per verb.
//
//	plumb install [--components …] [--components-extra ui] [--registry R] [--version V] [--network-policy] [--watch-all-namespaces] [--allowed-private-networks CIDRs] [--api-server-endpoints IP:PORTs] [--cluster-dns IPs] [--export]
//	plumb uninstall [--keep-namespace] [--dry-run]
//	plumb check [--pre]
//	plumb get all|sources [git|helm|chart|oci|all]|kustomizations|helmreleases|receivers|alerts|alert-providers|images [repository|policy|update|all] [NAME] [-A] [--watch] [--status-selector TYPE=STATUS]
//	plumb reconcile source [git|helm|chart|oci|bucket]|kustomization|helmrelease|receiver|alert|alert-provider|image [repository|policy|update] NAME [--with-source]
//	plumb confirm-prune kustomization|helmrelease NAME
//	plumb rollback kustomization|helmrelease NAME [--to N] [--follow-git]
//	plumb suspend|resume source [git|helm|chart|oci]|kustomization|helmrelease|receiver|alert|alert-provider|image [repository|policy|update] NAME
//	plumb diff kustomization|helmrelease NAME
//	plumb tree kustomization|helmrelease NAME
//	plumb events [--follow] [--for Kind/name] [--nats-url URL]
//	plumb trace KIND NAME
//	plumb stats [-A]
//	plumb export KIND NAME|--all [-A]
//	plumb ui [--address 127.0.0.1:9080] [--no-open]
//	plumb push artifact oci://HOST/REPO:TAG --path=DIR [--source=URL] [--revision=REV] [--creds USER:PASS]
//	plumb delete KIND NAME [--silent] [--wait]
//	plumb version [--client] [-o yaml|json]
//	plumb completion bash|zsh|fish|powershell
//	plumb create source git|helm|oci|bucket|chart|kustomization|helmrelease|alert|alert-provider|receiver NAME [flags] [--export]
//	plumb create secret git|helm|oci|tls|receiver NAME [flags] [--export]
//	plumb create image repository|policy|update NAME [flags] [--export]
//
// install, uninstall and check --pre are thin commands over
// cli/internal/install, which renders deploy/ (embedded through the module
// plumb.dev/deploy), applies it and removes it; bootstrap reuses it.
//
// Kinds are spelled as Flux spells them ("source git", "image policy",
// "alert-provider") or by the names of the kind table (kinds.go: every
// kind of pkg/kinds, so check, get all, delete and completion cover a new
// kind without a change); args.go reads them, with the family words
// "source" and "image" before a type word. A kind's get table is its
// columns (columns.go): READY, REVISION, AGE, MESSAGE, or Flux's own for
// the image kinds (get_image.go), which also say what their reconcile did. completion.go completes them, then the
// names of their objects, for cobra's completion scripts (__complete).
//
// The Kubernetes connection comes from the kubeconfig as kubectl finds it
// (--kubeconfig, then $KUBECONFIG, then ~/.kube/config), with --context and
// -n/--namespace overriding the current context's.
//
// Exit codes: 0 success (for diff: no drift), 1 a definite negative answer
// (diff found drift, a reconcile ended with Ready=False), 2 an error (bad
// arguments, an unreachable cluster or artifact, a timeout).
//
// reconcile sets reconcile.plumb.dev/requestedAt to a fresh token and waits
// until status.lastHandledReconcileAt carries it and the Ready condition has
// settled at the current generation (not Unknown, Reconciling not True),
// printing each new progress message on the way.
//
// create (create*.go) builds one typed object from Flux's flags, checks
// what the API server cannot check without a cluster (required flags,
// reference formats, the CRDs' type enums, files bounded to 1 MiB), and
// either prints it (--export; manifest cuts it to what belongs in Git) or
// server-side applies it as field manager plumb and waits as reconcile
// does, with the token already handled, for Ready at the new generation.
// A flag for a field Plumb's CRD lacks is refused with api/fluxport's
// reason. Credentials given to a source become a Secret named as the
// source, applied first; an ssh:// URL needs --known-hosts-file, as plumb
// scans no host keys.
//
// confirm-prune does the same with the annotation plumb.dev/confirm-prune
// set, in the same patch, to the digest of the render the prune guard holds
// (Ready=False PruneGuarded naming that digest); it refuses anything else.
// rollback sets plumb.dev/rollback to the digest of an entry of
// status.history (and, with --follow-git, plumb.dev/rollback-follow-git to
// the current render's), and resume removes both.
//
// diff, tree and get NAME read through pkg/inspect, which the UI shares:
// the view of a Kustomization or HelmRelease (inspect.Applied), the
// download of its render, the live objects of its inventory (a list per
// kind and namespace) and the comparison of one object.
//
// diff repeats sync-controller's comparison from outside: it downloads the
// rendered artifact (verifying its digest with pkg/fetch; an in-cluster
// artifact URL is reached through the API server's service proxy), stamps
// each object as sync-controller does (ownership labels, applied-hash
// annotation, default namespace; pkg/manage), and compares each with the
// cluster through pkg/drift's Compare, the function sync-controller's
// engine calls: a dry-run server-side apply as field manager plumb-sync,
// diffed with the live object through pkg/diff and the Kustomization's
// spec.ignore. Objects that do not exist are reported as to be created,
// and inventory entries no longer rendered as to be pruned. A HelmRelease
// goes the same way (pkg/inspect's Applied says how the two kinds differ:
// ownership labels, Helm hooks, driftDetection.ignore, pruning always on).
package cmd
