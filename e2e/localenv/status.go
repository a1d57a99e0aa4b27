package localenv

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/kinds"
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
// the inventory of its Kustomization (and HelmRelease). What a line says of
// an object comes from what its kind implements (pkg/kinds, api/meta,
// pkg/inspect), so a new kind needs no edit here.
func (e *Env) DemoStatus(ctx context.Context, d *Demo) []StatusLine {
	var lines []StatusLine
	var inv []*kustomizev1.Inventory
	for _, obj := range d.Objects {
		gvk := obj.GroupVersionKind()
		k, ok := kinds.Lookup(gvk.Kind)
		if !ok || k.GVK.GroupKind() != gvk.GroupKind() {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if err := e.Client.Get(ctx, key, live); err != nil {
			lines = append(lines, StatusLine{Kind: gvk.Kind, Name: key.String(), Status: "Missing", Detail: err.Error()})
			continue
		}
		line, i := objectLine(k, live)
		lines = append(lines, line)
		inv = append(inv, i)
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

// objectLine is the line of live, an object of kind k, and its inventory
// when it is an applier (nil otherwise).
func objectLine(k kinds.Kind, live *unstructured.Unstructured) (StatusLine, *kustomizev1.Inventory) {
	line := StatusLine{Kind: k.GVK.Kind, Name: client.ObjectKeyFromObject(live).String()}
	line.Status, line.Detail = readyOf(live)
	typed := k.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, typed); err != nil {
		return line, nil
	}
	line.Detail = detailOf(typed, live, line.Detail)
	if a, ok := inspect.AppliedOf(typed); ok {
		return line, a.Inventory
	}
	return line, nil
}

// detailOf puts before msg (the Ready message) what obj runs or serves: an
// applier's last applied revision (a HelmRelease's is its chart's) and,
// while it is under way, its sync's phase and wave; a source's artifact
// revision; a Receiver's webhook path.
func detailOf(obj client.Object, live *unstructured.Unstructured, msg string) string {
	if a, ok := inspect.AppliedOf(obj); ok {
		if rev := a.LastApplied; rev != "" {
			if a.IsHelmRelease() {
				rev = "chart " + rev
			}
			msg = rev + "  " + msg
		}
		if s := a.Sync; s != nil && s.Phase != "" && s.Phase != kustomizev1.PhaseSucceeded {
			msg = fmt.Sprintf("[%s wave %d] %s", s.Phase, s.Wave, msg)
		}
		return msg
	}
	if h, ok := obj.(meta.ArtifactHolder); ok && h.GetArtifact() != nil && h.GetArtifact().Revision != "" {
		msg = h.GetArtifact().Revision + "  " + msg
	}
	if p, _, _ := unstructured.NestedString(live.Object, "status", "webhookPath"); p != "" {
		msg = p + "  " + msg
	}
	return msg
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
