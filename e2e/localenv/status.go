package localenv

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
)

// StatusLine is the state of one object in a line: the Ready condition for
// Plumb's objects, the health for the objects a Kustomization applied.
type StatusLine struct {
	Kind   string
	Name   string // namespace/name
	Status string // Ready condition status, or health
	Detail string // revision and message
}

// String renders the line with padded columns.
func (l StatusLine) String() string {
	return fmt.Sprintf("%-14s %-34s %-12s %s", l.Kind, l.Name, l.Status, l.Detail)
}

// DemoStatus returns a line per Plumb object of the demo and per object in
// the inventory of its Kustomization (and HelmRelease).
func (e *Env) DemoStatus(ctx context.Context, d *Demo) []StatusLine {
	var lines []StatusLine
	var inv []*kustomizev1.Inventory
	for _, obj := range d.Objects {
		gvk := obj.GroupVersionKind()
		if !strings.HasSuffix(gvk.Group, "plumb.dev") {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		line := StatusLine{Kind: gvk.Kind, Name: key.String()}
		if err := e.Client.Get(ctx, key, live); err != nil {
			line.Status, line.Detail = "Missing", err.Error()
			lines = append(lines, line)
			continue
		}
		line.Status, line.Detail = readyOf(live)
		switch gvk.Kind {
		case "GitRepository", "HelmRepository":
			if rev, _, _ := unstructured.NestedString(live.Object, "status", "artifact", "revision"); rev != "" {
				line.Detail = rev + "  " + line.Detail
			}
		case "Kustomization":
			k := &kustomizev1.Kustomization{}
			if err := e.Client.Get(ctx, key, k); err == nil {
				inv = append(inv, k.Status.Inventory)
				if rev := k.Status.LastAppliedRevision; rev != "" {
					line.Detail = rev + "  " + line.Detail
				}
				if s := k.Status.Sync; s != nil && s.Phase != "" && s.Phase != kustomizev1.PhaseSucceeded {
					line.Detail = fmt.Sprintf("[%s wave %d] %s", s.Phase, s.Wave, line.Detail)
				}
			}
		case "HelmRelease":
			hr := &helmv2.HelmRelease{}
			if err := e.Client.Get(ctx, key, hr); err == nil {
				inv = append(inv, hr.Status.Inventory)
				if rev := hr.Status.LastAppliedRevision; rev != "" {
					line.Detail = "chart " + rev + "  " + line.Detail
				}
				if s := hr.Status.Sync; s != nil && s.Phase != "" && s.Phase != kustomizev1.PhaseSucceeded {
					line.Detail = fmt.Sprintf("[%s wave %d] %s", s.Phase, s.Wave, line.Detail)
				}
			}
		case "Receiver":
			if p, _, _ := unstructured.NestedString(live.Object, "status", "webhookPath"); p != "" {
				line.Detail = p + "  " + line.Detail
			}
		}
		lines = append(lines, line)
	}
	for _, i := range inv {
		if i == nil {
			continue
		}
		for _, ent := range i.Entries {
			lines = append(lines, e.healthLine(ctx, ent))
		}
	}
	return lines
}

func (e *Env) healthLine(ctx context.Context, ent kustomizev1.InventoryEntry) StatusLine {
	name := ent.Name
	if ent.Namespace != "" {
		name = ent.Namespace + "/" + ent.Name
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: ent.Group, Version: ent.Version, Kind: ent.Kind})
	line := StatusLine{Kind: ent.Kind, Name: name}
	var res health.Result
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ent.Namespace, Name: ent.Name}, obj); err != nil {
		res = health.Evaluate(nil)
	} else {
		res = health.Evaluate(obj)
	}
	line.Status, line.Detail = string(res.Status), res.Message
	return line
}

// readyOf returns the Ready condition's status and message ("Unknown" and
// the Reconciling message while there is none).
func readyOf(obj *unstructured.Unstructured) (string, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var ready, reconciling map[string]any
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		switch m["type"] {
		case "Ready":
			ready = m
		case "Reconciling":
			reconciling = m
		}
	}
	if ready == nil {
		if reconciling != nil {
			return "Reconciling", fmt.Sprint(reconciling["message"])
		}
		return "Unknown", "not reconciled yet"
	}
	status := fmt.Sprint(ready["status"])
	switch metav1.ConditionStatus(status) {
	case metav1.ConditionTrue:
		status = "Ready"
	case metav1.ConditionFalse:
		status = "NotReady"
	default:
		status = "Unknown"
	}
	return status, fmt.Sprint(ready["message"])
}
