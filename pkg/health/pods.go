package health

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
)

// Lister lists at most limit objects of one kind in one namespace that
// match selector: one page of one request, never a cache of the cluster.
// ListerFor makes one of a controller-runtime client.
type Lister func(ctx context.Context, apiVersion, kind, namespace string, selector labels.Selector, limit int64) ([]unstructured.Unstructured, error)

// The bounds of a Pod lookup: a workload has at most revisionHistoryLimit
// (10 by default) old ReplicaSets beside its new one, and one failing Pod
// explains the others, so a few of the newest are enough whatever the
// replica count.
const (
	MaxReplicaSetsListed = 20
	MaxPodsListed        = 10
)

// podLabel narrows a workload's selector to its newest Pods, or says why it
// cannot: the label its controller puts on the Pods of the current revision.
type podLabel struct{ key, value string }

// WithPods returns r with what the workload's newest Pods say about it
// appended ("1 of 2 replicas updated; Pod web-7d9…-x2k container web is
// CrashLoopBackOff (last exit 3, Error, 5 restarts)"), for a Deployment,
// StatefulSet or DaemonSet that is Progressing or Degraded. Any other
// object, a healthy one, a lookup that fails (no right to list Pods, the
// API server away) or finds nothing wrong returns r as it is: the Pods
// explain a health, they never decide it. It costs one or two bounded List
// requests (MaxReplicaSetsListed, MaxPodsListed), so callers ask only when
// they report an unhealthy workload, not on every evaluation.
func WithPods(ctx context.Context, obj *unstructured.Unstructured, r Result, list Lister) Result {
	if detail := PodDetail(ctx, obj, r, list); detail != "" {
		if r.Message == "" {
			r.Message = detail
		} else {
			r.Message += "; " + detail
		}
	}
	return r
}

// PodDetail is what WithPods appends: the first problem of the newest Pods
// of obj's current revision, or "".
func PodDetail(ctx context.Context, obj *unstructured.Unstructured, r Result, list Lister) string {
	if obj == nil || list == nil || (r.Status != Progressing && r.Status != Degraded) {
		return ""
	}
	if obj.GetDeletionTimestamp() != nil {
		return ""
	}
	if !HasPods(obj) {
		return ""
	}
	sel, ok := Selector(obj)
	if !ok {
		return ""
	}
	ns := obj.GetNamespace()
	label, ok := currentRevision(ctx, obj, sel, list)
	if ok {
		req, err := labels.NewRequirement(label.key, selection.Equals, []string{label.value})
		if err != nil {
			return ""
		}
		sel = sel.Add(*req)
	}
	pods, err := list(ctx, "v1", "Pod", ns, sel, MaxPodsListed)
	if err != nil {
		return ""
	}
	return explainPods(pods)
}

// HasPods reports whether WithPods looks at obj's Pods: a Deployment,
// StatefulSet or DaemonSet. Callers check it before reading the object
// again for WithPods.
func HasPods(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet")
}

// Selector is obj's spec.selector (a Deployment's, a Job's, …) as a
// labels.Selector; false for a missing or empty one, which would select
// every Pod of the namespace. `plumb logs` picks a workload's Pods by it.
func Selector(obj *unstructured.Unstructured) (labels.Selector, bool) {
	raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selector")
	if !ok || len(raw) == 0 {
		return nil, false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, false
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return nil, false
	}
	return sel, true
}

// currentRevision finds the label of the Pods of obj's newest revision: a
// StatefulSet's status.updateRevision (controller-revision-hash), a
// DaemonSet's template generation (pod-template-generation), and a
// Deployment's new ReplicaSet's pod-template-hash, found by its
// deployment.kubernetes.io/revision annotation among the ReplicaSets it
// owns. false when the status does not say (yet): then the workload's
// selector alone picks the Pods, old ones included.
func currentRevision(ctx context.Context, obj *unstructured.Unstructured, sel labels.Selector, list Lister) (podLabel, bool) {
	o := object{obj.Object}
	switch obj.GetKind() {
	case "StatefulSet":
		if rev := o.str("status", "updateRevision"); rev != "" {
			return podLabel{"controller-revision-hash", rev}, true
		}
	case "DaemonSet":
		if gen := obj.GetAnnotations()["deprecated.daemonset.template.generation"]; gen != "" {
			return podLabel{"pod-template-generation", gen}, true
		}
	case "Deployment":
		revision := obj.GetAnnotations()["deployment.kubernetes.io/revision"]
		if revision == "" {
			return podLabel{}, false
		}
		sets, err := list(ctx, "apps/v1", "ReplicaSet", obj.GetNamespace(), sel, MaxReplicaSetsListed)
		if err != nil {
			return podLabel{}, false
		}
		for _, rs := range sets {
			if rs.GetAnnotations()["deployment.kubernetes.io/revision"] != revision || !ownedBy(&rs, obj) {
				continue
			}
			if hash := rs.GetLabels()["pod-template-hash"]; hash != "" {
				return podLabel{"pod-template-hash", hash}, true
			}
		}
	}
	return podLabel{}, false
}

func ownedBy(obj, owner *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// explainPods returns the problem of the newest Pod that has one, and how
// many other listed Pods have one too.
func explainPods(pods []unstructured.Unstructured) string {
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := pods[i].GetCreationTimestamp(), pods[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return pods[i].GetName() < pods[j].GetName()
	})
	first, others := "", 0
	for i := range pods {
		if pods[i].GetDeletionTimestamp() != nil {
			continue
		}
		why := podProblem(object{pods[i].Object})
		if why == "" {
			continue
		}
		if first == "" {
			first = "Pod " + pods[i].GetName() + " " + why
			continue
		}
		others++
	}
	switch others {
	case 0:
		return first
	case 1:
		return first + " (and 1 more Pod)"
	}
	return fmt.Sprintf("%s (and %s more Pods)", first, strconv.Itoa(others))
}
