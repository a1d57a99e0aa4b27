package v1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// ObjectSetKind is the kind name of ObjectSet.
const ObjectSetKind = "ObjectSet"

// The labels sync-controller puts on every object of a set: which set
// gave it (the UI lists a set's objects by them).
const (
	NameLabel      = "set.plumb.dev/name"
	NamespaceLabel = "set.plumb.dev/namespace"
)

// Bounds of an ObjectSet's input, stated here so that the CRD's schema,
// sync-controller and the docs say the same.
const (
	// MaxGenerators is the most generators one set may list.
	MaxGenerators = 10
	// MaxListElements is the most elements one list generator may hold.
	MaxListElements = 1000
	// MaxTemplateBytes bounds spec.template.
	MaxTemplateBytes = 64 << 10

	// MaxElementDetails bounds status.elementDetails: the status of a set
	// of 1,000 elements stays far below what the API server stores.
	MaxElementDetails = 100

	// MaxElementValuesBytes bounds one element's values in
	// status.elementDetails.
	MaxElementValuesBytes = 256
)

// ObjectSetSpec says which elements to generate and what to render for
// each.
type ObjectSetSpec struct {
	// Interval between two evaluations of the generators.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Suspend stops the evaluations while true; the objects stay as they
	// are.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ServiceAccountName is the ServiceAccount, in the set's namespace,
	// that writes and deletes the set's objects (impersonated, as a
	// Kustomization's); sync-controller's --default-service-account when
	// unset, else sync-controller's own identity.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Generators give the set's elements: every generator's elements, in
	// order.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	Generators []Generator `json:"generators"`

	// Template is a Go text/template rendered once per element, with the
	// element as its data; it yields YAML documents of objects, all in the
	// set's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Template string `json:"template"`
}

// Generator is one source of elements: exactly one of its fields is set.
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.git), has(self.clusters), has(self.pullRequests), has(self.matrix), has(self.merge)].filter(x, x).size() == 1",message="a generator sets exactly one of list, git, clusters, pullRequests, matrix and merge"
type Generator struct {
	// List gives its elements as written.
	// +optional
	List *ListGenerator `json:"list,omitempty"`

	// Git gives an element per matching folder or file of a
	// GitRepository's artifact.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`

	// Clusters gives an element per kubeconfig Secret its selector
	// matches in the set's namespace.
	// +optional
	Clusters *ClustersGenerator `json:"clusters,omitempty"`

	// PullRequests gives an element per open pull request of a GitHub,
	// GitLab or Gitea repository (Argo CD's pullRequest generator).
	// +optional
	PullRequests *PullRequestGenerator `json:"pullRequests,omitempty"`

	// Matrix gives the cartesian product of two generators' elements.
	// +optional
	Matrix *MatrixGenerator `json:"matrix,omitempty"`

	// Merge gives the first generator's elements, each overlaid by the
	// elements of the second with equal mergeKeys.
	// +optional
	Merge *MergeGenerator `json:"merge,omitempty"`
}

// ChildGenerator is a generator inside a matrix or merge: exactly one of
// list, git, clusters and pullRequests (a matrix or merge does not nest).
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.git), has(self.clusters), has(self.pullRequests)].filter(x, x).size() == 1",message="a matrix or merge child sets exactly one of list, git, clusters and pullRequests"
type ChildGenerator struct {
	// List gives its elements as written.
	// +optional
	List *ListGenerator `json:"list,omitempty"`

	// Git gives an element per matching folder or file of a
	// GitRepository's artifact.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`

	// Clusters gives an element per kubeconfig Secret its selector
	// matches.
	// +optional
	Clusters *ClustersGenerator `json:"clusters,omitempty"`

	// PullRequests gives an element per open pull request.
	// +optional
	PullRequests *PullRequestGenerator `json:"pullRequests,omitempty"`
}

// ListGenerator gives the elements written in it.
type ListGenerator struct {
	// Elements are JSON objects, each an element; its fields are the
	// template's data.
	// +required
	// +kubebuilder:validation:MaxItems=1000
	Elements []apiextensionsv1.JSON `json:"elements"`
}

// GitGenerator reads the artifact of a GitRepository.
// +kubebuilder:validation:XValidation:rule="has(self.directories) || has(self.files)",message="a git generator lists directories or files"
type GitGenerator struct {
	// SourceRef names the GitRepository; its namespace defaults to the
	// set's, and may differ only without --no-cross-namespace-refs.
	// +required
	SourceRef GitSourceReference `json:"sourceRef"`

	// Directories give an element per folder that matches a path
	// pattern and no exclude pattern (Argo CD's git directory
	// generator).
	// +optional
	// +kubebuilder:validation:MaxItems=25
	Directories []GitPath `json:"directories,omitempty"`

	// Files give an element per YAML or JSON file that matches a path
	// pattern and no exclude pattern (Argo CD's git file generator): the
	// file's fields; a file holding a list gives an element per item.
	// +optional
	// +kubebuilder:validation:MaxItems=25
	Files []GitPath `json:"files,omitempty"`
}

// GitSourceReference names a GitRepository.
type GitSourceReference struct {
	// Kind of the referent.
	// +required
	// +kubebuilder:validation:Enum=GitRepository
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; the set's when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// GitPath is a path pattern of a git generator: Go's path.Match syntax
// per segment (*, ?, [a-z]), plus ** for any number of folders.
type GitPath struct {
	// Path is the pattern, relative to the artifact's root.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`

	// Exclude drops what the pattern matches from what the others match.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// ClustersGenerator gives an element per kubeconfig Secret (the shape a
// Kustomization's spec.kubeConfig.secretRef reads: key value, or
// value.yaml) in the set's namespace.
type ClustersGenerator struct {
	// Selector picks the Secrets by label; every Secret of the namespace
	// that has a kubeconfig when unset.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Values are added to every element of this generator as .values.
	// +optional
	// +kubebuilder:validation:MaxProperties=50
	Values map[string]string `json:"values,omitempty"`
}

// DefaultPullRequestRequeueAfterSeconds is how often a pullRequests
// generator asks its Git host again when requeueAfterSeconds is unset
// (Argo CD's default).
const DefaultPullRequestRequeueAfterSeconds = 1800

// PullRequestGenerator gives an element per open pull request of one
// repository (Argo CD's pullRequest generator): exactly one of github,
// gitlab and gitea.
// +kubebuilder:validation:XValidation:rule="[has(self.github), has(self.gitlab), has(self.gitea)].filter(x, x).size() == 1",message="a pullRequests generator sets exactly one of github, gitlab and gitea"
type PullRequestGenerator struct {
	// GitHub lists the pull requests of a GitHub or GitHub Enterprise
	// repository.
	// +optional
	GitHub *PullRequestGitHub `json:"github,omitempty"`

	// GitLab lists the merge requests of a GitLab project.
	// +optional
	GitLab *PullRequestGitLab `json:"gitlab,omitempty"`

	// Gitea lists the pull requests of a Gitea (or Forgejo) repository.
	// +optional
	Gitea *PullRequestGitea `json:"gitea,omitempty"`

	// Filters keep the pull requests that match at least one filter (all
	// when there are none).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Filters []PullRequestFilter `json:"filters,omitempty"`

	// RequeueAfterSeconds is how often the set is evaluated again for
	// this generator, when it is sooner than spec.interval; 1800 when
	// unset.
	// +optional
	// +kubebuilder:validation:Minimum=10
	RequeueAfterSeconds *int64 `json:"requeueAfterSeconds,omitempty"`
}

// PullRequestGitHub is a GitHub repository.
type PullRequestGitHub struct {
	// Owner is the user or organization owning the repository.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9_.-]+$"
	Owner string `json:"owner"`

	// Repo is the repository's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9_.-]+$"
	Repo string `json:"repo"`

	// API is the REST API's base URL: https://api.github.com when unset,
	// https://HOST/api/v3 for GitHub Enterprise.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern="^https?://"
	API string `json:"api,omitempty"`

	// TokenRef is the Secret key holding a token, sent as
	// "Authorization: Bearer"; anonymous when unset.
	// +optional
	TokenRef *SecretKeyRef `json:"tokenRef,omitempty"`

	// Labels keep the pull requests that carry every one of them.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=100
	Labels []string `json:"labels,omitempty"`
}

// PullRequestGitLab is a GitLab project.
type PullRequestGitLab struct {
	// Project is the project's ID or its path (group/project).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Project string `json:"project"`

	// API is the GitLab server's URL: https://gitlab.com when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern="^https?://"
	API string `json:"api,omitempty"`

	// TokenRef is the Secret key holding a token, sent as PRIVATE-TOKEN;
	// anonymous when unset.
	// +optional
	TokenRef *SecretKeyRef `json:"tokenRef,omitempty"`

	// Labels keep the merge requests that carry every one of them.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=100
	Labels []string `json:"labels,omitempty"`

	// PullRequestState is the state of the merge requests listed.
	// +optional
	// +kubebuilder:default=opened
	// +kubebuilder:validation:Enum=opened;closed;merged;locked
	PullRequestState string `json:"pullRequestState,omitempty"`
}

// PullRequestGitea is a Gitea repository.
type PullRequestGitea struct {
	// Owner is the user or organization owning the repository.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9_.-]+$"
	Owner string `json:"owner"`

	// Repo is the repository's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9_.-]+$"
	Repo string `json:"repo"`

	// API is the Gitea server's URL.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern="^https?://"
	API string `json:"api"`

	// TokenRef is the Secret key holding a token, sent as
	// "Authorization: token"; anonymous when unset.
	// +optional
	TokenRef *SecretKeyRef `json:"tokenRef,omitempty"`

	// Labels keep the pull requests that carry every one of them.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=100
	Labels []string `json:"labels,omitempty"`
}

// SecretKeyRef is a key of a Secret in the set's namespace.
type SecretKeyRef struct {
	// SecretName is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// Key is the key of the Secret's data that holds the token.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PullRequestFilter keeps the pull requests whose branches match its
// regular expressions (Go's RE2 syntax), both when both are set.
type PullRequestFilter struct {
	// BranchMatch is matched against the pull request's head branch.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	BranchMatch string `json:"branchMatch,omitempty"`

	// TargetBranchMatch is matched against the branch it would merge
	// into.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	TargetBranchMatch string `json:"targetBranchMatch,omitempty"`
}

// MatrixGenerator is the cartesian product of two generators.
type MatrixGenerator struct {
	// Generators are exactly two.
	// +required
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	Generators []ChildGenerator `json:"generators"`
}

// MergeGenerator overlays the elements of the first generator with those
// of the second that have equal values for every merge key.
type MergeGenerator struct {
	// MergeKeys are the fields (top-level, or dotted paths such as
	// path.basename) whose values pair two elements.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	MergeKeys []string `json:"mergeKeys"`

	// Generators are exactly two.
	// +required
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	Generators []ChildGenerator `json:"generators"`
}

// ObjectSetStatus is what sync-controller observed and did.
type ObjectSetStatus struct {
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

	// Elements is how many elements the last evaluation gave.
	// +optional
	Elements int `json:"elements,omitempty"`

	// ElementDetails are the first MaxElementDetails elements of the last
	// render that was applied and pruned in full: each element's values and
	// the objects the template gave for it, so that a reader (the UI) can
	// tell which object came from which element without rendering the
	// template again.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ElementDetails []ElementStatus `json:"elementDetails,omitempty"`

	// Inventory lists the objects the set applied, as a Kustomization's.
	// +optional
	Inventory *kustomizev1.Inventory `json:"inventory,omitempty"`
}

// ElementStatus is one element of an applied render.
type ElementStatus struct {
	// Values are the element's values as compact JSON with sorted keys,
	// cut at MaxElementValuesBytes (then ending in "…").
	// +kubebuilder:validation:MaxLength=260
	Values string `json:"values"`

	// Objects are the objects the template gave for the element
	// (Kind/namespace/name), at most the MaxDocuments an element may give.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Objects []string `json:"objects,omitempty"`
}

// ObjectSet renders a template of Plumb objects once per element of its
// generators.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=os;objset
// +kubebuilder:printcolumn:name="Elements",type=integer,JSONPath=`.status.elements`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ObjectSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ObjectSetSpec   `json:"spec,omitempty"`
	Status ObjectSetStatus `json:"status,omitempty"`
}

// ObjectSetList is a list of ObjectSet.
// +kubebuilder:object:root=true
type ObjectSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ObjectSet `json:"items"`
}

// GetConditions returns the status conditions.
func (in *ObjectSet) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ObjectSet) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *ObjectSet) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ObjectSet) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt
// (meta.Requestable): plumb reconcile and a Receiver reconcile it at once.
func (in *ObjectSet) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ObjectSet) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
