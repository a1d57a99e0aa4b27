package flux

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The keys Flux reads on the objects it applies, as a label or an
// annotation.
const (
	// PruneKey: Disabled keeps the object from every prune, the one of a
	// sync that no longer renders it and the one of its Kustomization's
	// deletion.
	PruneKey = "kustomize.toolkit.fluxcd.io/prune"
	// SSAKey is the object's apply policy: Override (the default), Merge,
	// IfNotPresent or Ignore.
	SSAKey = "kustomize.toolkit.fluxcd.io/ssa"
	// ForceKey: Enabled lets the object be deleted and created again when
	// the API server refuses a change in place (an immutable field).
	ForceKey = "kustomize.toolkit.fluxcd.io/force"
	// ReconcileKey: Disabled, on the object in Git or in the cluster, stops
	// every write to it and its prune.
	ReconcileKey = "kustomize.toolkit.fluxcd.io/reconcile"
	// SubstituteKey: Disabled leaves the object out of postBuild
	// substitution.
	SubstituteKey = "kustomize.toolkit.fluxcd.io/substitute"
	// DriftDetectionKey: Disabled, on an object a HelmRelease renders,
	// leaves it out of drift detection and correction (Flux's
	// helm-controller).
	DriftDetectionKey = "helm.toolkit.fluxcd.io/driftDetection"
)

// The values of the keys above, as Flux's documentation writes them.
const (
	Enabled  = "Enabled"
	Disabled = "Disabled"

	// Override applies the object as Git has it and takes back the fields
	// kubectl set (Flux's default policy).
	Override = "Override"
	// Merge applies the object as Git has it and leaves the fields other
	// managers added.
	Merge = "Merge"
	// IfNotPresent creates the object when it is missing and never writes
	// it again.
	IfNotPresent = "IfNotPresent"
	// Ignore never applies the object and never prunes it.
	Ignore = "Ignore"
)

// Metadata is the part of an object the readers look at.
type Metadata interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}

// Has reports whether m carries key with value, as a label or an
// annotation, compared as Flux compares them: an empty value is no value,
// and case does not count.
func Has(m Metadata, key, value string) bool {
	_, ok := find(m, key, value)
	return ok
}

// Found is a key of this package on an object: where it was found and
// what it says, written the way a message quotes it.
type Found struct {
	// Key is the label or annotation key.
	Key string
	// Value is its value as written.
	Value string
	// Label is true when it is a label, false when an annotation.
	Label bool
}

// String is `annotation kustomize.toolkit.fluxcd.io/prune: disabled`.
func (f Found) String() string {
	where := "annotation "
	if f.Label {
		where = "label "
	}
	return where + f.Key + ": " + f.Value
}

// find returns the key of m whose value is one of values (Has's
// comparison), annotations before labels; ok is false when there is none.
func find(m Metadata, key string, values ...string) (Found, bool) {
	if m == nil {
		return Found{}, false
	}
	for _, label := range []bool{false, true} {
		v := value(m, label, key)
		if v == "" {
			continue
		}
		for _, want := range values {
			if strings.EqualFold(v, want) {
				return Found{Key: key, Value: v, Label: label}, true
			}
		}
	}
	return Found{}, false
}

// Excluded returns the key that keeps m from every write, Flux's
// exclusion: reconcile: disabled or ssa: Ignore. Flux reads it on the
// object in Git and on the object in the cluster alike, so either may be
// passed; ok is false when neither key says so.
func Excluded(m Metadata) (Found, bool) {
	if f, ok := find(m, ReconcileKey, Disabled); ok {
		return f, true
	}
	return find(m, SSAKey, Ignore)
}

// KeptFromPrune returns the key that keeps the object in the cluster, m,
// from a prune: prune: disabled, or one of Excluded's. Flux reads it on
// the object in the cluster.
func KeptFromPrune(m Metadata) (Found, bool) {
	if f, ok := find(m, PruneKey, Disabled); ok {
		return f, true
	}
	return Excluded(m)
}

// CreateOnly returns the ssa: IfNotPresent key of the object in Git, m:
// it is created when missing and never written once it exists.
func CreateOnly(m Metadata) (Found, bool) { return find(m, SSAKey, IfNotPresent) }

// KeepsForeignFields reports whether the object in Git, m, asks for ssa:
// Merge: fields other managers set and Git does not are left.
func KeepsForeignFields(m Metadata) bool { return Has(m, SSAKey, Merge) }

// TakesBackKubectlFields reports whether the object in Git, m, asks for
// ssa: Override written out: the fields kubectl set and Git does not are
// removed at the next apply.
func TakesBackKubectlFields(m Metadata) bool { return Has(m, SSAKey, Override) }

// MayRecreate reports whether m (the object in Git or in the cluster)
// carries force: enabled.
func MayRecreate(m Metadata) bool { return Has(m, ForceKey, Enabled) }

// SubstituteDisabled reports whether m carries substitute: disabled.
func SubstituteDisabled(m Metadata) bool { return Has(m, SubstituteKey, Disabled) }

// DriftDetectionDisabled reports whether m carries the helm-controller's
// driftDetection: disabled.
func DriftDetectionDisabled(m Metadata) bool { return Has(m, DriftDetectionKey, Disabled) }

// Maps is Metadata from the two maps, for objects that are not
// Kubernetes API objects (kyaml's nodes).
type Maps struct{ Labels, Annotations map[string]string }

// GetLabels returns m.Labels.
func (m Maps) GetLabels() map[string]string { return m.Labels }

// GetAnnotations returns m.Annotations.
func (m Maps) GetAnnotations() map[string]string { return m.Annotations }

// value is the label (or annotation) key of m, "" when there is none. An
// unstructured object's is read in place: its GetAnnotations and GetLabels
// copy the whole map for each key asked, and every apply asks a few.
func value(m Metadata, label bool, key string) string {
	u, ok := m.(*unstructured.Unstructured)
	if !ok {
		if label {
			return m.GetLabels()[key]
		}
		return m.GetAnnotations()[key]
	}
	field := "annotations"
	if label {
		field = "labels"
	}
	meta, _ := u.Object["metadata"].(map[string]any)
	all, _ := meta[field].(map[string]any)
	v, _ := all[key].(string)
	if v == "" {
		return ""
	}
	// As GetAnnotations reads it: a map with a value that is neither a
	// string nor null is no map at all.
	for _, other := range all {
		if _, ok := other.(string); !ok && other != nil {
			return ""
		}
	}
	return v
}
