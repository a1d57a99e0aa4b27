package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// ImageUpdateAutomationKind is the kind name of ImageUpdateAutomation.
const ImageUpdateAutomationKind = "ImageUpdateAutomation"

// ImageUpdateAutomationSpec says which repository and files to write the
// latest images of ImagePolicies into, and how to commit and push them.
type ImageUpdateAutomationSpec struct {
	// SourceRef names the GitRepository written to; the automation clones
	// and pushes with its URL and its spec.secretRef credentials, never
	// others. A namespace other than the automation's is refused while
	// image-controller runs with --no-cross-namespace-refs.
	// +required
	SourceRef GitSourceReference `json:"sourceRef"`

	// Git says what to check out, how to commit and where to push.
	// +required
	Git GitSpec `json:"git"`

	// Interval between two runs; an ImagePolicy's new image or a new
	// revision of the GitRepository starts one at once.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// PolicySelector selects the ImagePolicies of the automation's
	// namespace whose images are written; all of them when unset.
	// +optional
	PolicySelector *metav1.LabelSelector `json:"policySelector,omitempty"`

	// Update says which files are updated and how.
	// +optional
	// +kubebuilder:default={"strategy":"Setters"}
	Update *UpdateStrategy `json:"update,omitempty"`

	// Suspend stops the automation's runs while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// GitSourceReference names the GitRepository of an automation.
type GitSourceReference struct {
	// APIVersion of the referent: source.plumb.dev/v1, or Flux's
	// source.toolkit.fluxcd.io/v1 which a ported manifest names (the same
	// kind under Plumb's group); empty means source.plumb.dev/v1.
	// +optional
	// +kubebuilder:validation:Enum=source.plumb.dev/v1;source.toolkit.fluxcd.io/v1
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent; only GitRepository.
	// +optional
	// +kubebuilder:default=GitRepository
	// +kubebuilder:validation:Enum=GitRepository
	Kind string `json:"kind,omitempty"`

	// Name of the GitRepository.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the GitRepository; the automation's when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GitSpec is the Git side of an automation.
type GitSpec struct {
	// Checkout is the ref the commit is based on; the GitRepository's
	// spec.ref when unset.
	// +optional
	Checkout *GitCheckoutSpec `json:"checkout,omitempty"`

	// Commit says who commits and with what message.
	// +required
	Commit CommitSpec `json:"commit"`

	// Push says where the commit goes; the checkout's branch when unset.
	// +optional
	Push *PushSpec `json:"push,omitempty"`
}

// GitCheckoutSpec is the ref to check out.
type GitCheckoutSpec struct {
	// Ref names exactly one of a branch, a tag or a commit.
	// +required
	Ref GitCheckoutRef `json:"ref"`
}

// GitCheckoutRef is one of a branch, a tag or a full commit hash. Flux's
// semver and name are not implemented (api/fluxport says why).
// +kubebuilder:validation:XValidation:rule="(has(self.branch) ? 1 : 0) + (has(self.tag) ? 1 : 0) + (has(self.commit) ? 1 : 0) == 1",message="exactly one of branch, tag and commit must be set"
type GitCheckoutRef struct {
	// Branch to check out; the commit goes on it unless git.push.branch
	// names another.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`

	// Tag to check out; git.push.branch is then required.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Tag string `json:"tag,omitempty"`

	// Commit to check out, a full SHA-1 hash; git.push.branch is then
	// required.
	// +optional
	// +kubebuilder:validation:Pattern="^[0-9a-f]{40}$"
	Commit string `json:"commit,omitempty"`
}

// CommitSpec is how the automation commits.
type CommitSpec struct {
	// Author is the commit's author and committer.
	// +required
	Author CommitUser `json:"author"`

	// SigningKey signs the commit with an OpenPGP or an SSH key.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`

	// MessageTemplate is a Go text/template of the commit message over
	// .AutomationObject, .Changed (FileChanges, Objects, Changes) and
	// .Values; a default message naming the changes when unset. Bounded
	// in size, shape and run time (pkg/imageupdate).
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// MessageTemplateValues are .Values of the template.
	// +optional
	MessageTemplateValues map[string]string `json:"messageTemplateValues,omitempty"`
}

// CommitUser is a Git identity.
type CommitUser struct {
	// Name of the author.
	// +optional
	Name string `json:"name,omitempty"`

	// Email of the author.
	// +required
	// +kubebuilder:validation:MinLength=1
	Email string `json:"email"`
}

// SigningKey names the Secret of the key that signs the commit. For type
// gpg "git.asc" holds an armored OpenPGP private key and "passphrase" its
// passphrase when it has one; for type ssh "identity" holds an OpenSSH
// private key and "password" its passphrase when it has one: the keys of
// a GitRepository's SSH Secret, so one Secret can serve both.
type SigningKey struct {
	// SecretRef names the Secret in the automation's namespace.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// Type is the key's format: gpg (OpenPGP) when unset, or ssh (an
	// SSH signature, which Git verifies with gpg.format=ssh; ed25519,
	// ECDSA, or RSA of 2048 bits or more).
	// +optional
	Type SigningKeyType `json:"type,omitempty"`
}

// SigningKeyType is the format of a commit's signing key.
// +kubebuilder:validation:Enum=gpg;ssh
type SigningKeyType string

const (
	// SigningKeyTypeGPG signs with the OpenPGP key in "git.asc".
	SigningKeyTypeGPG SigningKeyType = "gpg"
	// SigningKeyTypeSSH signs with the SSH key in "identity".
	SigningKeyTypeSSH SigningKeyType = "ssh"
)

// PushSpec is where the commit is pushed. It is never force-pushed.
type PushSpec struct {
	// Branch receives the commit; when it differs from the checkout's
	// branch (a branch for review), it starts at the checkout when
	// missing, and new commits go on its head when present.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`

	// Refspec is pushed besides the branch, <local>:<remote> without +
	// or wildcards (refs/heads/main:refs/for/main for Gerrit).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Refspec string `json:"refspec,omitempty"`

	// Options are push options (git push -o); a server that does not
	// accept push options fails the run rather than ignoring them.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Options map[string]string `json:"options,omitempty"`
}

// UpdateStrategyName names an update strategy.
// +kubebuilder:validation:Enum=Setters
type UpdateStrategyName string

// UpdateStrategySetters edits the fields marked with $imagepolicy
// comments (Flux's Setters).
const UpdateStrategySetters UpdateStrategyName = "Setters"

// UpdateStrategy is which files are updated and how.
type UpdateStrategy struct {
	// Strategy is the update strategy; only Setters.
	// +optional
	// +kubebuilder:default=Setters
	Strategy UpdateStrategyName `json:"strategy,omitempty"`

	// Path is the folder, relative to the repository's root, whose YAML
	// files are updated; the root when empty. Nothing outside it is
	// written.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// ImageUpdateAutomationStatus is what the automation's last runs did.
type ImageUpdateAutomationStatus struct {
	// The reconcile.plumb.dev/requestedAt value last handled.
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAutomationRunTime is when a run last completed, whether or not
	// it committed.
	// +optional
	LastAutomationRunTime *metav1.Time `json:"lastAutomationRunTime,omitempty"`

	// LastPushCommit is the hash of the last commit pushed.
	// +optional
	LastPushCommit string `json:"lastPushCommit,omitempty"`

	// LastPushTime is when the last commit was pushed.
	// +optional
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`

	// ObservedPolicies are the selected ImagePolicies' latest images in
	// the last completed run, by policy name.
	// +optional
	ObservedPolicies map[string]ImageRef `json:"observedPolicies,omitempty"`

	// ObservedSourceRevision is the revision of the GitRepository's
	// artifact at the last completed run.
	// +optional
	ObservedSourceRevision string `json:"observedSourceRevision,omitempty"`
}

// ImageUpdateAutomation writes the latest images of ImagePolicies into a
// GitRepository's manifests, commits and pushes them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=iua;imgupd;imgauto
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Last run",type=string,JSONPath=`.status.lastAutomationRunTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImageUpdateAutomation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageUpdateAutomationSpec   `json:"spec,omitempty"`
	Status ImageUpdateAutomationStatus `json:"status,omitempty"`
}

// ImageUpdateAutomationList is a list of ImageUpdateAutomation.
// +kubebuilder:object:root=true
type ImageUpdateAutomationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdateAutomation `json:"items"`
}

// GetConditions returns the status conditions.
func (in *ImageUpdateAutomation) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImageUpdateAutomation) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *ImageUpdateAutomation) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ImageUpdateAutomation) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *ImageUpdateAutomation) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImageUpdateAutomation) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// UpdatePath returns spec.update.path, the root when unset.
func (in *ImageUpdateAutomation) UpdatePath() string {
	if in.Spec.Update == nil {
		return ""
	}
	return in.Spec.Update.Path
}
