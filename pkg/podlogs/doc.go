// Package podlogs finds the Pods of an application — the Pods of a
// Kustomization's or HelmRelease's hooks and of the workloads in its
// inventory — and reads their containers' logs within bounds. It is
// written once for `plumb logs --kustomization` and the UI's log view, so
// that both read the same Pods with the same limits:
//
//   - Of lists at most MaxPods Pods, MaxPodsPerObject per workload or
//     hook, with one list per object; BelongsTo says whether one Pod is
//     in an application's tree by walking its ownerReferences (at most
//     MaxOwnerDepth reads), so a view of one Pod costs a few requests
//     however large the application.
//   - Options turns what a reader asks for into the pods/log request:
//     the tail (DefaultTail unless given, at most MaxTail), the previous
//     container, and never more than MaxBytes of one container's log.
//   - Lines splits a log into lines no longer than MaxLineBytes, so a
//     log without newlines costs no more memory than a long line.
//
// Every read is made with the caller's client, so the API server decides
// who may read which log (the pods/log subresource) — the UI's user,
// `plumb`'s kubeconfig.
package podlogs
