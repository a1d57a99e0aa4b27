package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncWindowKind says whether a sync window lets syncs in or keeps them out.
// +kubebuilder:validation:Enum=allow;deny
type SyncWindowKind string

const (
	// SyncWindowAllow lets new revisions be applied while it is active;
	// when a Kustomization has allow windows and none is active, new
	// revisions wait for the next one.
	SyncWindowAllow SyncWindowKind = "allow"
	// SyncWindowDeny keeps new revisions out while it is active, whatever
	// allow windows say.
	SyncWindowDeny SyncWindowKind = "deny"
)

// SyncWindow is a recurring span of time, as Argo CD writes one: it starts
// at each time of schedule and lasts duration. While a Kustomization or a
// HelmRelease is outside its windows (a deny window is active, or it has
// allow windows and none is active) a new revision is held, not applied
// (docs/design/sync-engine.md, "Sync windows").
// +kubebuilder:validation:XValidation:rule="duration(self.duration) > duration('0s')",message="duration must be greater than zero"
type SyncWindow struct {
	// Kind is allow or deny.
	// +required
	Kind SyncWindowKind `json:"kind"`

	// Schedule is when the window starts: a cron expression of five fields
	// (minute, hour, day of month, month, day of week), e.g. "0 22 * * 1-5",
	// read in timeZone.
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^\S+( +\S+){4}$`
	Schedule string `json:"schedule"`

	// Duration is how long the window lasts from each start, e.g. 1h30m.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:MaxLength=32
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone schedule is read in, e.g.
	// Europe/Berlin; UTC when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// ManualSync lets a manual sync through while this window keeps
	// automatic ones out: a deny window while it is active, an allow window
	// while it is not.
	// +optional
	ManualSync bool `json:"manualSync,omitempty"`

	// DriftCorrection, false, stops drift correction while this window
	// keeps syncs out: drift is then only reported. Unset or true, drift is
	// still corrected (to the revision applied last) while a new revision
	// is held.
	// +optional
	DriftCorrection *bool `json:"driftCorrection,omitempty"`
}

// SyncWindowStatus is where a Kustomization or HelmRelease stands with its
// sync windows (sync-controller's). It is set only while the object is
// outside its windows.
type SyncWindowStatus struct {
	// HeldRevision is the revision rendered and not applied because the
	// windows are closed; empty when nothing is held.
	// +optional
	HeldRevision string `json:"heldRevision,omitempty"`

	// NextOpen is when the windows open next: the held revision is applied
	// then. Unset when no window opens within a year.
	// +optional
	NextOpen *metav1.Time `json:"nextOpen,omitempty"`

	// Windows names the windows that keep syncs out now: spec.syncWindows[i]
	// or SyncWindowPolicy/<name>[i], and those allow windows that are
	// not active.
	// +optional
	Windows []string `json:"windows,omitempty"`

	// DriftCorrection is false while a window stops drift correction.
	DriftCorrection bool `json:"driftCorrection"`
}

// SyncWindowPolicySpec is a set of sync windows shared by the
// Kustomizations and HelmReleases of its namespace that its selector
// matches.
type SyncWindowPolicySpec struct {
	// Selector picks, by label, the Kustomizations and HelmReleases of the
	// policy's namespace the windows apply to; an empty selector picks
	// every one.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// Windows are added to each selected object's own spec.syncWindows.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	Windows []SyncWindow `json:"windows"`
}

// SyncWindowPolicy shares sync windows between the Kustomizations and
// HelmReleases of a namespace, by label. sync-controller reads it; nothing
// writes its status.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=swp
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SyncWindowPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SyncWindowPolicySpec `json:"spec,omitempty"`
}

// SyncWindowPolicyList is a list of SyncWindowPolicy.
// +kubebuilder:object:root=true
type SyncWindowPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SyncWindowPolicy `json:"items"`
}

// SyncWindowPolicyKind is the kind of SyncWindowPolicy.
const SyncWindowPolicyKind = "SyncWindowPolicy"

// OutsideSyncWindowReason: a new revision is held because the object is
// outside its sync windows (Ready=False, Reconciling=True).
const OutsideSyncWindowReason = "OutsideSyncWindow"

// SyncWindowInvalidReason: a sync window's schedule or time zone does not
// parse (Stalled=True until the spec or the policy changes).
const SyncWindowInvalidReason = "SyncWindowInvalid"
