package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Status is the health of one object.
type Status string

// The health statuses, from best to worst as Worse orders them.
const (
	Healthy     Status = "Healthy"
	Suspended   Status = "Suspended"
	Progressing Status = "Progressing"
	Missing     Status = "Missing"
	Degraded    Status = "Degraded"
	Unknown     Status = "Unknown"
)

// rank orders the statuses; a status not listed ranks as Unknown, the worst,
// so a typo never passes for healthy.
var rank = map[Status]int{
	Healthy:     0,
	Suspended:   1,
	Progressing: 2,
	Missing:     3,
	Degraded:    4,
	Unknown:     5,
}

func rankOf(s Status) int {
	if r, ok := rank[s]; ok {
		return r
	}
	return rank[Unknown]
}

// Worse reports whether a is strictly worse than b in the order
// Healthy < Suspended < Progressing < Missing < Degraded < Unknown.
func Worse(a, b Status) bool {
	return rankOf(a) > rankOf(b)
}

// Result is the health of one object and why.
type Result struct {
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"`
}

// String renders "Status: message".
func (r Result) String() string {
	if r.Message == "" {
		return string(r.Status)
	}
	return string(r.Status) + ": " + r.Message
}

func result(s Status, format string, args ...any) Result {
	return Result{Status: s, Message: fmt.Sprintf(format, args...)}
}

// checker computes the health of one kind.
type checker func(o object) Result

// checkers maps group/kind to its rule. The legacy extensions group is listed
// for the kinds that once lived there; their status fields are the same.
var checkers = map[string]checker{
	"apps/Deployment":                     deployment,
	"extensions/Deployment":               deployment,
	"apps/StatefulSet":                    statefulSet,
	"apps/DaemonSet":                      daemonSet,
	"extensions/DaemonSet":                daemonSet,
	"apps/ReplicaSet":                     replicaSet,
	"extensions/ReplicaSet":               replicaSet,
	"/Pod":                                pod,
	"batch/Job":                           job,
	"batch/CronJob":                       cronJob,
	"/PersistentVolumeClaim":              pvc,
	"/Service":                            service,
	"networking.k8s.io/Ingress":           ingress,
	"extensions/Ingress":                  ingress,
	"autoscaling/HorizontalPodAutoscaler": hpa,
	"apiregistration.k8s.io/APIService":   apiService,
	"apiextensions.k8s.io/CustomResourceDefinition": crd,
	"/Namespace":           namespace,
	"argoproj.io/Rollout":  rollout,
	"argoproj.io/Workflow": workflow,
	// Plumb's own applications: their Ready comes from sync-controller,
	// which may say nothing for a while about a generation not rendered
	// yet (it writes no status until the render or 30 s).
	"kustomize.plumb.dev/Kustomization": plumbApplication,
	"helm.plumb.dev/HelmRelease":        plumbApplication,
}

// Evaluate returns the health of obj. A nil object is Missing; an object with
// a deletionTimestamp is Progressing (its finalizers still run); otherwise the
// rule of its kind decides, and kinds without one follow kstatus conventions.
func Evaluate(obj *unstructured.Unstructured) Result {
	if obj == nil || obj.Object == nil {
		return result(Missing, "object does not exist")
	}
	o := object{obj.Object}
	if obj.GetDeletionTimestamp() != nil {
		if f := obj.GetFinalizers(); len(f) > 0 {
			return result(Progressing, "being deleted, waiting for finalizers %v", f)
		}
		return result(Progressing, "being deleted")
	}
	gvk := obj.GroupVersionKind()
	if c, ok := checkers[gvk.Group+"/"+gvk.Kind]; ok {
		return c(o)
	}
	return generic(o)
}
