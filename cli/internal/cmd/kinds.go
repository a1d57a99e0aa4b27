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
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// kind describes one Plumb kind to the commands: how to read the fields
// they show, whatever the Go type.
type kind struct {
	Kind   string
	plural string
	// names are what a user may type for it, singular and plural.
	names   []string
	newObj  func() client.Object
	newList func() client.ObjectList
	// status reads the fields the commands show; zero values where the
	// kind has no such field.
	status func(client.Object) status
	// reconcilable kinds have spec.suspend and honour requestedAt.
	reconcilable bool
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
	gitRepositoryKind = &kind{
		Kind: sourcev1.GitRepositoryKind, plural: "GitRepositories",
		names:   []string{"source", "sources", "gitrepository", "gitrepositories", "gitrepo", "gitrepos"},
		newObj:  func() client.Object { return &sourcev1.GitRepository{} },
		newList: func() client.ObjectList { return &sourcev1.GitRepositoryList{} },
		status: func(o client.Object) status {
			g := o.(*sourcev1.GitRepository)
			return sourceStatus(g.Status.Conditions, g.Status.ObservedGeneration, g.Status.LastHandledReconcileAt, g.Spec.Suspend, g.Status.Artifact)
		},
		reconcilable: true,
	}
	helmRepositoryKind = &kind{
		Kind: sourcev1.HelmRepositoryKind, plural: "HelmRepositories",
		names:   []string{"helmrepository", "helmrepositories", "helmrepo", "helmrepos"},
		newObj:  func() client.Object { return &sourcev1.HelmRepository{} },
		newList: func() client.ObjectList { return &sourcev1.HelmRepositoryList{} },
		status: func(o client.Object) status {
			r := o.(*sourcev1.HelmRepository)
			return sourceStatus(r.Status.Conditions, r.Status.ObservedGeneration, r.Status.LastHandledReconcileAt, r.Spec.Suspend, r.Status.Artifact)
		},
		reconcilable: true,
	}
	helmChartKind = &kind{
		Kind: sourcev1.HelmChartKind, plural: "HelmCharts",
		names:   []string{"helmchart", "helmcharts", "hc"},
		newObj:  func() client.Object { return &sourcev1.HelmChart{} },
		newList: func() client.ObjectList { return &sourcev1.HelmChartList{} },
		status: func(o client.Object) status {
			c := o.(*sourcev1.HelmChart)
			return sourceStatus(c.Status.Conditions, c.Status.ObservedGeneration, c.Status.LastHandledReconcileAt, c.Spec.Suspend, c.Status.Artifact)
		},
		reconcilable: true,
	}
	ociRepositoryKind = &kind{
		Kind: sourcev1.OCIRepositoryKind, plural: "OCIRepositories",
		names:   []string{"ocirepository", "ocirepositories", "ocirepo", "ocirepos"},
		newObj:  func() client.Object { return &sourcev1.OCIRepository{} },
		newList: func() client.ObjectList { return &sourcev1.OCIRepositoryList{} },
		status: func(o client.Object) status {
			r := o.(*sourcev1.OCIRepository)
			return sourceStatus(r.Status.Conditions, r.Status.ObservedGeneration, r.Status.LastHandledReconcileAt, r.Spec.Suspend, r.Status.Artifact)
		},
		reconcilable: true,
	}
	helmReleaseKind = &kind{
		Kind: helmv2.HelmReleaseKind, plural: "HelmReleases",
		names:   []string{"helmrelease", "helmreleases", "hr"},
		newObj:  func() client.Object { return &helmv2.HelmRelease{} },
		newList: func() client.ObjectList { return &helmv2.HelmReleaseList{} },
		status: func(o client.Object) status {
			h := o.(*helmv2.HelmRelease)
			return status{conditions: h.Status.Conditions, observedGeneration: h.Status.ObservedGeneration,
				revision: h.Status.LastAppliedRevision, lastHandled: h.Status.LastHandledReconcileAt, suspended: h.Spec.Suspend}
		},
		reconcilable: true,
	}
	kustomizationKind = &kind{
		Kind: kustomizev1.KustomizationKind, plural: "Kustomizations",
		names:   []string{"kustomization", "kustomizations", "ks"},
		newObj:  func() client.Object { return &kustomizev1.Kustomization{} },
		newList: func() client.ObjectList { return &kustomizev1.KustomizationList{} },
		status: func(o client.Object) status {
			k := o.(*kustomizev1.Kustomization)
			return status{conditions: k.Status.Conditions, observedGeneration: k.Status.ObservedGeneration,
				revision: k.Status.LastAppliedRevision, lastHandled: k.Status.LastHandledReconcileAt, suspended: k.Spec.Suspend}
		},
		reconcilable: true,
	}
	receiverKind = &kind{
		Kind: notificationv1.ReceiverKind, plural: "Receivers",
		names:   []string{"receiver", "receivers"},
		newObj:  func() client.Object { return &notificationv1.Receiver{} },
		newList: func() client.ObjectList { return &notificationv1.ReceiverList{} },
		status: func(o client.Object) status {
			r := o.(*notificationv1.Receiver)
			return status{conditions: r.Status.Conditions, observedGeneration: r.Status.ObservedGeneration, suspended: r.Spec.Suspend}
		},
	}
	alertKind = &kind{
		Kind: notificationv1.AlertKind, plural: "Alerts",
		names:   []string{"alert", "alerts"},
		newObj:  func() client.Object { return &notificationv1.Alert{} },
		newList: func() client.ObjectList { return &notificationv1.AlertList{} },
		status: func(o client.Object) status {
			a := o.(*notificationv1.Alert)
			return status{conditions: a.Status.Conditions, observedGeneration: a.Status.ObservedGeneration, suspended: a.Spec.Suspend}
		},
	}
	providerKind = &kind{
		Kind: notificationv1.ProviderKind, plural: "Providers",
		names:   []string{"provider", "providers", "alert-provider", "alert-providers"},
		newObj:  func() client.Object { return &notificationv1.Provider{} },
		newList: func() client.ObjectList { return &notificationv1.ProviderList{} },
		status: func(o client.Object) status {
			p := o.(*notificationv1.Provider)
			return status{conditions: p.Status.Conditions, observedGeneration: p.Status.ObservedGeneration, suspended: p.Spec.Suspend}
		},
	}
	// kinds in the order `get all` prints them: sources, then what
	// applies them, then the notification kinds.
	kinds = []*kind{gitRepositoryKind, helmRepositoryKind, helmChartKind, ociRepositoryKind, kustomizationKind, helmReleaseKind, receiverKind, alertKind, providerKind}
)

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

// sourceStatus is the status of a source kind: its conditions, and the
// revision of its artifact when it has one.
func sourceStatus(conds []metav1.Condition, observedGeneration int64, lastHandled string, suspended bool, a *meta.Artifact) status {
	s := status{conditions: conds, observedGeneration: observedGeneration, lastHandled: lastHandled, suspended: suspended}
	if a != nil {
		s.revision = a.Revision
	}
	return s
}
