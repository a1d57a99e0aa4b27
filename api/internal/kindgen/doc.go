// Command kindgen writes zz_generated.kinds.go in each API package it is
// given: the methods of api/meta's kind interfaces whose answer is a plain
// field of the kind, so that a kind with spec.interval is meta.Scheduled
// without anyone writing the one-liner that says so.
//
// It writes, for every top-level kind (a struct embedding metav1.TypeMeta
// and metav1.ObjectMeta):
//
//   - IsSuspended from spec.suspend (bool): meta.Suspendable;
//   - GetRequeueAfter from spec.interval (metav1.Duration): meta.Scheduled;
//   - GetRetryInterval from spec.retryInterval (*metav1.Duration), or
//     spec.interval while it is unset: meta.Retried;
//   - GetArtifact from status.artifact (*meta.Artifact): meta.ArtifactHolder.
//
// A method the package already declares by hand is left to it: that is
// where a kind says something a field alone does not (HelmRepository's
// 10m default interval, a Kustomization's artifact being its rendered
// manifests). A field of another type is not a fact kindgen knows how to
// state, so it writes nothing for it, and api/kinds_test.go then fails
// until the method is written by hand.
//
// Why a program of Plumb's own: controller-gen's markers generate deepcopy
// methods, CRDs and RBAC, but no marker adds a method of one's choosing to
// a type, and no library writes accessors from struct fields to a given
// interface. It reads the package's files with go/parser alone (the api
// module keeps its dependencies to apimachinery), so it matches types by
// how the files spell them: metav1.Duration is a selector whose import
// path is k8s.io/apimachinery/pkg/apis/meta/v1, whatever its local name.
//
// `make generate` runs it over api/*/v* after controller-gen, and `make
// verify` fails when the tree differs afterwards, as it does for deepcopy;
// TestGeneratedFilesAreCurrent fails `go test ./api/...` too.
package main
