package cmd

import (
	"fmt"
	"sort"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/kinds"
)

// kind is one of Plumb's kinds (pkg/kinds) as the commands know it: the
// names a user may type for it, and the fields they show, read through
// the interfaces of api/meta whatever the Go type.
type kind struct {
	Kind   string
	plural string
	// names are what a user may type for it, singular and plural.
	names []string
	def   kinds.Kind
	// reconcilable kinds honour requestedAt.
	reconcilable bool
	// suspendable kinds have spec.suspend (not an ExternalArtifact).
	suspendable bool
	// columns are its get table's after NAME (defaultColumns unless the
	// kind has its own, as Flux's image tables).
	columns []column
	// report is what a finished reconcile of it says after "reconciled"
	// when the revision does not say it (nil: the revision).
	report func(o client.Object) string
}

// commandKind is the registry's kind named kind, with the names the
// commands accept for it: its route, resource and short names, then
// aliases (Flux's words among them).
func commandKind(name string, aliases ...string) *kind {
	def, ok := kinds.Lookup(name)
	if !ok {
		panic("no kind " + name + " in pkg/kinds")
	}
	names := append([]string{def.Route(), def.Resource}, def.ShortNames...)
	_, suspendable := def.New().(meta.Suspendable)
	return &kind{
		Kind: def.GVK.Kind, plural: def.Plural, def: def,
		names:        append(names, aliases...),
		reconcilable: def.Requestable(),
		suspendable:  suspendable,
		columns:      defaultColumns,
	}
}

// withTable gives k its own get table columns and reconcile report.
func (k *kind) withTable(columns []column, report func(o client.Object) string) *kind {
	k.columns, k.report = columns, report
	return k
}

func (k *kind) newObj() client.Object      { return k.def.New() }
func (k *kind) newList() client.ObjectList { return k.def.NewList() }

// status reads the fields the commands show; zero values where the kind
// has no such field.
func (k *kind) status(o client.Object) status {
	var s status
	if c, ok := o.(interface{ GetConditions() []metav1.Condition }); ok {
		s.conditions = c.GetConditions()
	}
	if g, ok := o.(interface{ GetObservedGeneration() int64 }); ok {
		s.observedGeneration = g.GetObservedGeneration()
	}
	if r, ok := o.(meta.Requestable); ok {
		s.lastHandled = r.GetLastHandledReconcileRequest()
	}
	if r, ok := o.(meta.Suspendable); ok {
		s.suspended = r.IsSuspended()
	}
	// What an applier runs is what it last applied; a source's, its
	// artifact.
	if a, ok := o.(meta.Applier); ok {
		s.revision = a.GetLastAppliedRevision()
	} else if a, ok := o.(meta.ArtifactHolder); ok && a.GetArtifact() != nil {
		s.revision = a.GetArtifact().Revision
	}
	return s
}

// status is the part of an object's status the commands use.
type status struct {
	conditions         []metav1.Condition
	observedGeneration int64
	revision           string
	lastHandled        string
	suspended          bool
}

func (s status) condition(t string) *metav1.Condition {
	return apimeta.FindStatusCondition(s.conditions, t)
}

var (
	gitRepositoryKind  = commandKind(sourcev1.GitRepositoryKind, "gitrepos", "source", "sources")
	helmRepositoryKind = commandKind(sourcev1.HelmRepositoryKind, "helmrepos")
	helmChartKind      = commandKind(sourcev1.HelmChartKind)
	ociRepositoryKind  = commandKind(sourcev1.OCIRepositoryKind, "ocirepos")
	bucketKind         = commandKind(sourcev1.BucketKind)
	artifactGenKind    = commandKind(sourceextv1beta1.ArtifactGeneratorKind)
	externalArtKind    = commandKind(sourcev1.ExternalArtifactKind)
	helmReleaseKind    = commandKind(helmv2.HelmReleaseKind)
	kustomizationKind  = commandKind(kustomizev1.KustomizationKind)
	receiverKind       = commandKind(notificationv1.ReceiverKind)
	alertKind          = commandKind(notificationv1.AlertKind)
	providerKind       = commandKind(notificationv1.ProviderKind, "alert-provider", "alert-providers")
	imageRepoKind      = commandKind(imagev1.ImageRepositoryKind).withTable(imageRepositoryColumns, imageRepositoryReport)
	imagePolicyKind    = commandKind(imagev1.ImagePolicyKind).withTable(imagePolicyColumns, imagePolicyReport)
	imageUpdateKind    = commandKind(imagev1.ImageUpdateAutomationKind).withTable(imageUpdateColumns, imageUpdateReport)
	objectSetKind      = commandKind(setv1.ObjectSetKind)
	// allKinds are every kind of pkg/kinds (a test holds them equal), in
	// the order `get all` and `check` print them: sources, then what
	// applies them and the sets that write those, then the notification
	// kinds, then the image kinds.
	allKinds = []*kind{gitRepositoryKind, helmRepositoryKind, helmChartKind, ociRepositoryKind, bucketKind, artifactGenKind, externalArtKind, kustomizationKind, helmReleaseKind, objectSetKind, receiverKind, alertKind, providerKind, imageRepoKind, imagePolicyKind, imageUpdateKind}
)

// kindsWhere are the kinds of allKinds for which keep is true.
func kindsWhere(keep func(*kind) bool) []*kind {
	var out []*kind
	for _, k := range allKinds {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// kindOfRef is the command kind whose Kind is name ("GitRepository"), as an
// object's reference names it; nil for none.
func kindOfRef(name string) *kind {
	for _, k := range allKinds {
		if k.Kind == name {
			return k
		}
	}
	return nil
}

// kindNamed finds the kind a user typed, among allowed.
func kindNamed(name string, allowed ...*kind) (*kind, error) {
	name = strings.ToLower(name)
	var valid []string
	for _, k := range allowed {
		for _, n := range k.names {
			if n == name {
				return k, nil
			}
		}
		valid = append(valid, k.names[0])
	}
	sort.Strings(valid)
	return nil, fmt.Errorf("unknown kind %q: use one of %s", name, strings.Join(valid, ", "))
}

// readyOf returns the Ready condition's status and message, "Unknown" when
// there is none yet.
func readyOf(s status) (string, string) {
	c := s.condition(meta.ReadyCondition)
	if c == nil {
		return string(metav1.ConditionUnknown), "waiting to be reconciled"
	}
	return string(c.Status), c.Message
}

// ref renders Kind/namespace/name.
func ref(k *kind, o client.Object) string {
	return k.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// listItems returns the items of a typed list, each a pointer into it.
func listItems(l client.ObjectList) []client.Object {
	var out []client.Object
	_ = apimeta.EachListItem(l, func(o runtime.Object) error {
		out = append(out, o.(client.Object))
		return nil
	})
	return out
}
