package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/podlogs"
	"plumb.dev/ui/internal/httpapi"
)

// FieldManager is the field manager of the UI's writes.
const FieldManager = "plumb-ui"

// RestartedAtAnnotation is the pod template annotation whose change rolls
// a workload's Pods, as `kubectl rollout restart` sets it.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// MaxReplicas bounds a scale from the page: a typo of 10000 is refused
// here rather than asked of the cluster.
const MaxReplicas = 1000

// actionRequest is the body of POST …/resources/{action}.
type actionRequest struct {
	ID       string `json:"id"`
	Replicas *int32 `json:"replicas,omitempty"`
}

// ActionResult is the answer of an action: what was done, and what
// sync-controller will make of it.
type ActionResult struct {
	Done string `json:"done"`
	// Note says whether Plumb keeps the change (Note).
	Note string `json:"note,omitempty"`
}

// actionKinds are the kinds each action applies to, as group/Kind.
var actionKinds = map[string][]string{
	"restart": {"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet"},
	"scale":   {"apps/Deployment", "apps/StatefulSet"},
	"delete":  {"/Pod"},
	"suspend": {"batch/CronJob"},
	"resume":  {"batch/CronJob"},
}

func (h *handlers) action(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	allowed, known := actionKinds[action]
	if !known {
		httpapi.Error(w, http.StatusNotFound, "no action %q: restart, scale, delete, suspend or resume", action)
		return
	}
	var req actionRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	id, ok := objectID(w, req.ID)
	if !ok {
		return
	}
	gk := id.Group + "/" + id.Kind
	fits := false
	for _, k := range allowed {
		fits = fits || k == gk
	}
	if !fits {
		httpapi.Error(w, http.StatusBadRequest, "%s applies to %v, not to %s", action, allowed, id.Kind)
		return
	}
	if action == "scale" && (req.Replicas == nil || *req.Replicas < 0 || *req.Replicas > MaxReplicas) {
		httpapi.Error(w, http.StatusBadRequest, "scale needs replicas, 0 to %d", MaxReplicas)
		return
	}
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	t, ok := application(ctx, w, r)
	if !ok {
		return
	}
	if action == "delete" {
		pod, ok := t.podOf(ctx, w, req.ID)
		if !ok {
			return
		}
		// The Pod read is the one deleted: a Pod of the same name made
		// since is another's.
		pre := metav1.Preconditions{UID: &pod.UID}
		if err := t.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &pre}); err != nil {
			httpapi.APIError(w, err)
			return
		}
		httpapi.JSON(w, http.StatusOK, ActionResult{Done: "Pod " + pod.Namespace + "/" + pod.Name + " deleted"})
		return
	}
	if !t.inInventory(id) {
		httpapi.Error(w, http.StatusNotFound, "%s is not in the inventory of %s %s/%s", id.Text(),
			t.applied.Kind, t.applied.Object.GetNamespace(), t.applied.Object.GetName())
		return
	}
	if err := t.do(ctx, action, id, req.Replicas); err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, ActionResult{Done: done(action, id, req.Replicas), Note: t.note(action)})
}

func (t *target) inInventory(id object.ID) bool {
	for _, e := range podlogs.Inventory(t.applied.Object) {
		if e.Group == id.Group && e.Kind == id.Kind && e.Namespace == id.Namespace && e.Name == id.Name {
			return true
		}
	}
	return false
}

// do makes the action's one write, as the user: a merge patch, or the
// scale subresource (what `kubectl scale` writes, so a role that grants
// only deployments/scale may scale).
func (t *target) do(ctx context.Context, action string, id object.ID, replicas *int32) error {
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	var patch map[string]any
	switch action {
	case "restart":
		patch = map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{RestartedAtAnnotation: time.Now().Format(time.RFC3339)}}}}}
	case "scale":
		patch = map[string]any{"spec": map[string]any{"replicas": *replicas}}
	case "suspend", "resume":
		patch = map[string]any{"spec": map[string]any{"suspend": action == "suspend"}}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	var sub []string
	if action == "scale" {
		sub = []string{"scale"}
	}
	apps, batch := t.cs.AppsV1(), t.cs.BatchV1()
	switch id.Kind {
	case "Deployment":
		_, err = apps.Deployments(id.Namespace).Patch(ctx, id.Name, types.MergePatchType, data, opts, sub...)
	case "StatefulSet":
		_, err = apps.StatefulSets(id.Namespace).Patch(ctx, id.Name, types.MergePatchType, data, opts, sub...)
	case "DaemonSet":
		_, err = apps.DaemonSets(id.Namespace).Patch(ctx, id.Name, types.MergePatchType, data, opts)
	case "CronJob":
		_, err = batch.CronJobs(id.Namespace).Patch(ctx, id.Name, types.MergePatchType, data, opts)
	default:
		err = fmt.Errorf("no %s of a %s", action, id.Kind)
	}
	return err
}

func done(action string, id object.ID, replicas *int32) string {
	what := id.Kind + " " + id.Namespace + "/" + id.Name
	switch action {
	case "restart":
		return what + " restarted"
	case "scale":
		return fmt.Sprintf("%s scaled to %d", what, *replicas)
	case "suspend":
		return what + " suspended"
	}
	return what + " resumed"
}

// Note says what sync-controller will make of an action on an object of
// its inventory. It applies the fields Git sets and no others (server-side
// apply), so:
//
//   - a restart stays: Git does not set the restartedAt annotation (a
//     manifest that does would put it back);
//   - a scale, and a CronJob's suspend, are drift when Git sets the field:
//     reverted about a second later under driftPolicy Correct, reported
//     under Report, kept when a spec.ignore rule covers the field (the
//     usual rule for replicas an HPA owns) or when Git leaves it out;
//   - while the Kustomization or HelmRelease is suspended nothing is
//     reverted, until it resumes.
func (t *target) note(action string) string {
	if action == "restart" {
		return "Plumb keeps a restart: it applies only the fields " + t.applied.Origin + " sets, and " + t.applied.Origin + " does not set " + RestartedAtAnnotation + "."
	}
	field := "spec.replicas"
	if action == "suspend" || action == "resume" {
		field = "spec.suspend"
	}
	owner := t.applied.Kind + " " + t.applied.Object.GetNamespace() + "/" + t.applied.Object.GetName()
	if t.suspended() {
		return fmt.Sprintf("%s is suspended: this change stays until it resumes; then, if Git sets %s, it is drift.", owner, field)
	}
	origin := t.applied.Origin
	switch t.applied.Policy {
	case "":
		return fmt.Sprintf("%s neither corrects nor reports drift: this change stays.", owner)
	case kustomizev1.DriftPolicyReport:
		return fmt.Sprintf("If %s sets %s, %s reports this change as drift (driftPolicy Report) and leaves it.", origin, field, owner)
	}
	return fmt.Sprintf("If %s sets %s, %s reverts this change about a second later, unless an ignore rule covers %s (as for replicas an autoscaler owns).", origin, field, owner, field)
}

func (t *target) suspended() bool {
	var spec struct {
		Spec struct {
			Suspend bool `json:"suspend"`
		} `json:"spec"`
	}
	data, err := json.Marshal(t.applied.Object)
	return err == nil && json.Unmarshal(data, &spec) == nil && spec.Spec.Suspend
}
