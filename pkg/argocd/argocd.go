package argocd

import (
	"slices"
	"strconv"
	"strings"
)

// The annotations Argo CD reads on the objects it syncs.
const (
	// HookAnnotation lists the hook types an object is: PreSync, Sync,
	// PostSync, SyncFail, PreDelete, PostDelete, or Skip.
	HookAnnotation = "argocd.argoproj.io/hook"
	// HookDeletePolicyAnnotation lists when a hook is deleted:
	// HookSucceeded, HookFailed, BeforeHookCreation.
	HookDeletePolicyAnnotation = "argocd.argoproj.io/hook-delete-policy"
	// SyncWaveAnnotation is the object's wave, an integer.
	SyncWaveAnnotation = "argocd.argoproj.io/sync-wave"
	// SyncOptionsAnnotation is a comma list of Name=value sync options.
	SyncOptionsAnnotation = "argocd.argoproj.io/sync-options"
	// CompareOptionsAnnotation is a comma list of compare options.
	CompareOptionsAnnotation = "argocd.argoproj.io/compare-options"
	// IgnoreRestartPolicyAnnotation, set on a Pod, makes a running Pod
	// with restartPolicy OnFailure or Never read like a long-running one
	// (Healthy once Ready) instead of Progressing until it succeeds: for
	// pods an operator runs as servers with a policy other than Always.
	// pkg/health reads it.
	IgnoreRestartPolicyAnnotation = "argocd.argoproj.io/ignore-restart-policy"
)

// The hook types of HookAnnotation.
const (
	PreSync    = "PreSync"
	Sync       = "Sync"
	PostSync   = "PostSync"
	SyncFail   = "SyncFail"
	PreDelete  = "PreDelete"
	PostDelete = "PostDelete"
	// Skip makes Argo CD leave the object out of the sync: neither
	// applied nor pruned.
	Skip = "Skip"
)

var hookTypes = []string{PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete, Skip}

// The delete policies of HookDeletePolicyAnnotation.
var deletePolicies = []string{"HookSucceeded", "HookFailed", "BeforeHookCreation"}

// The sync options Plumb follows, as they are written in
// SyncOptionsAnnotation.
const (
	PruneDisabled               = "Prune=false"
	DeleteDisabled              = "Delete=false"
	Replace                     = "Replace=true"
	Force                       = "Force=true"
	ServerSideApply             = "ServerSideApply=true"
	ValidateDisabled            = "Validate=false"
	SkipDryRunOnMissingResource = "SkipDryRunOnMissingResource=true"
	PruneLast                   = "PruneLast=true"
	CreateNamespace             = "CreateNamespace=true"
	// PruneConfirm and DeleteConfirm ask for a person's confirmation
	// before the object is pruned, or deleted with its owner.
	PruneConfirm  = "Prune=confirm"
	DeleteConfirm = "Delete=confirm"
)

// IgnoreExtraneous in CompareOptionsAnnotation keeps an object that Git no
// longer has out of what is shown as out of sync.
const IgnoreExtraneous = "IgnoreExtraneous"

// Hook returns the hook types listed in HookAnnotation, known ones only,
// in the order written, each once; ok reports whether the annotation is
// set at all. Argo CD counts an object with the annotation as a hook even
// when no type in it is one it knows: such a hook never runs.
func Hook(ann map[string]string) (types []string, ok bool) {
	v, ok := ann[HookAnnotation]
	if !ok {
		return nil, false
	}
	return known(v, hookTypes), true
}

// HookDeletePolicies returns the known policies of
// HookDeletePolicyAnnotation, in the order written, each once.
func HookDeletePolicies(ann map[string]string) []string {
	return known(ann[HookDeletePolicyAnnotation], deletePolicies)
}

// Wave returns SyncWaveAnnotation when it is set and an integer as Go's
// strconv.Atoi reads it (Argo CD's reading: no spaces, no plus sign
// refused); ok is false otherwise, and the caller falls back to what Argo
// CD falls back to.
func Wave(ann map[string]string) (wave int, ok bool) {
	v, set := ann[SyncWaveAnnotation]
	if !set {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// HasSyncOption reports whether SyncOptionsAnnotation lists option, one
// of the constants above.
func HasSyncOption(ann map[string]string, option string) bool {
	return slices.Contains(Items(ann[SyncOptionsAnnotation]), option)
}

// Items splits a comma list, as Argo CD's and Helm's annotations write
// them, trimming each item and dropping empty ones.
func Items(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// known returns the items of list that are in allowed, each once.
func known(list string, allowed []string) []string {
	var out []string
	for _, f := range Items(list) {
		if slices.Contains(allowed, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
