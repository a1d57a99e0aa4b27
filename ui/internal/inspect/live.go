package inspect

import (
	"context"
	"errors"
	"net/http"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// maxEvents bounds the Events listed for one object.
const maxEvents = 100

// livePage is the answer of GET .../live?id=: one applied object (the
// fields docs/design/ui.md says the front end reads, and what says why a
// part is missing).
type livePage struct {
	ID string `json:"id"`
	// Object is the live object as the cluster holds it, without
	// managedFields, Secrets' values redacted; null when it does not exist.
	Object map[string]any `json:"object"`
	Health health.Result  `json:"health"`
	// Hook says the object is a hook of the render: it runs during a
	// sync and is not compared.
	Hook bool `json:"hook"`
	// Diff is live vs Git, the changed fields; empty when they match, or
	// when DiffUnavailable says why there is no comparison.
	Diff []change `json:"diff"`
	// Compared says what the live object was compared with.
	Compared        *compared    `json:"compared,omitempty"`
	DiffUnavailable *unavailable `json:"diffUnavailable,omitempty"`
	// Events are the object's Kubernetes Events, newest first.
	Events            []event      `json:"events"`
	EventsUnavailable *unavailable `json:"eventsUnavailable,omitempty"`
}

// compared is the side of Git a diff was made against.
type compared struct {
	// Revision is the render's revision.
	Revision string `json:"revision"`
	// Action is what a sync would do to the object (pkg/diff).
	Action diff.Action `json:"action,omitempty"`
	Note   string      `json:"note,omitempty"`
}

// unavailable says why a part of a page is missing: with the API server's
// status when it refused (403 without the right to dry-run apply).
type unavailable struct {
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason"`
}

// change is one changed field: live (before) → Git (after), JSON text as
// in pkg/diff, and the field manager other than sync-controller's that
// owns the field in the live object: who changed it.
type change struct {
	Path    string `json:"path"`
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
	Manager string `json:"manager,omitempty"`
}

type event struct {
	Type           string      `json:"type"`
	Reason         string      `json:"reason"`
	Message        string      `json:"message"`
	Count          int32       `json:"count"`
	FirstTimestamp metav1.Time `json:"firstTimestamp"`
	LastTimestamp  metav1.Time `json:"lastTimestamp"`
	Reporter       string      `json:"reporter,omitempty"`
}

func (h *handlers) live(r *request) (any, error) {
	ctx := r.Context()
	a, ok := inspect.AppliedOf(r.obj)
	if !ok {
		return nil, notFound("a %s applies no objects", r.kind.GVK.Kind)
	}
	id, err := object.ParseText(r.URL.Query().Get("id"))
	if err != nil {
		return nil, badRequest("id: %v", err)
	}
	page := &livePage{ID: id.Text(), Diff: []change{}, Events: []event{}}

	rendered, renderNote := h.rendered(ctx, r, a)
	desired, err := findRendered(r.client, a, rendered, id)
	if err != nil {
		return nil, err
	}
	gvk, known := versionOf(a, desired, id)
	if !known {
		return nil, notFound("%s is not an object of %s/%s/%s (not in its inventory or its newest render)", id, a.Kind, r.obj.GetNamespace(), r.obj.GetName())
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, err
	}
	page.Health = a.Health(live)
	if live != nil {
		page.Object = redactedLive(live)
	}
	page.Hook = desired != nil && a.IsHook(desired)
	page.Diff, page.Compared, page.DiffUnavailable = h.compare(ctx, r, a, desired, live, renderNote)
	if live != nil {
		page.Events, page.EventsUnavailable = listEvents(ctx, r.client, live)
	}
	return page, nil
}

// findRendered is the object of the newest render with the id, prepared
// as sync-controller applies it; nil when the render has none (or is not
// at hand). A hook with only a generateName is found by the name the
// newest sync gave it.
func findRendered(c client.Client, a *inspect.Applied, rendered []*unstructured.Unstructured, id object.ID) (*unstructured.Unstructured, error) {
	candidates := rendered
	if id.Name != "" && !hasName(rendered, id.Name) {
		candidates = a.SyncedHooks(c.RESTMapper(), rendered)
	}
	for _, o := range candidates {
		gvk := o.GroupVersionKind()
		if gvk.Group != id.Group || gvk.Kind != id.Kind || o.GetName() != id.Name {
			continue
		}
		o = o.DeepCopy()
		if a.IsHook(o) {
			// Not stamped: a hook is created, not applied.
			if err := manage.Resolve(c.RESTMapper(), o, a.Namespace); err != nil {
				continue
			}
		} else if err := a.Prepare(c, o); err != nil {
			continue
		}
		if o.GetNamespace() == id.Namespace {
			return o, nil
		}
	}
	return nil, nil
}

// hasName reports whether an object of objs is named name.
func hasName(objs []*unstructured.Unstructured, name string) bool {
	for _, o := range objs {
		if o.GetName() == name {
			return true
		}
	}
	return false
}

// versionOf is the group, version and kind to read the object with: the
// render's, else the inventory's.
func versionOf(a *inspect.Applied, desired *unstructured.Unstructured, id object.ID) (schema.GroupVersionKind, bool) {
	if desired != nil {
		return desired.GroupVersionKind(), true
	}
	if a.Inventory != nil {
		for _, e := range a.Inventory.Entries {
			if inventory.IDOf(e) == id {
				return schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}, true
			}
		}
	}
	return schema.GroupVersionKind{}, false
}

// compare is live vs Git: the dry-run apply sync-controller would make
// (pkg/inspect.Compare), with the user's identity; or why there is none.
func (h *handlers) compare(ctx context.Context, r *request, a *inspect.Applied, desired, live *unstructured.Unstructured, renderNote string) ([]change, *compared, *unavailable) {
	changes := []change{}
	switch {
	case a.Rendered == nil || renderNote != "":
		return changes, nil, &unavailable{Reason: renderNote}
	case desired == nil:
		c := &compared{Revision: a.Rendered.Revision, Note: "no longer in " + a.Origin + " and not in the cluster"}
		if live != nil {
			c.Action, c.Note = diff.Deleted, "no longer in "+a.Origin+"; a sync prunes it"
			if why := a.KeptFromPrune(live); why != "" {
				c.Action, c.Note = "", "no longer in "+a.Origin+"; "+why
			}
		}
		return changes, c, nil
	case a.IsHook(desired):
		return changes, nil, &unavailable{Reason: "a hook: it runs during a sync and is not kept in step, so it is not compared"}
	}
	ig, err := diff.NewIgnorer(a.Ignore)
	if err != nil {
		return changes, nil, &unavailable{Reason: a.IgnoreField() + ": " + err.Error()}
	}
	res := inspect.Compare(ctx, r.client, desired, ig)
	if res.Err != nil {
		u := &unavailable{Status: statusOf(res.Err), Reason: res.Err.Error()}
		if apierrors.IsForbidden(res.Err) {
			u.Reason = "you may not dry-run apply this object (the comparison is a server-side dry-run apply, which needs the patch right): " + res.Err.Error()
		}
		return changes, nil, u
	}
	found := res.Changes
	if len(found) > 0 {
		// A Secret this user cannot read hides every value (RedactAll).
		redactor, _ := a.SecretRedactor(ctx, r.client)
		found = redactor.Changes(found)
	}
	managers := drift.ForeignManagersOf(nil)
	if live != nil {
		managers = drift.ForeignManagersOf(live.GetManagedFields())
	}
	for _, c := range found {
		changes = append(changes, change{Path: c.Path, Before: c.Before, After: c.After, Manager: managers.Of(c.Path)})
	}
	return changes, &compared{Revision: a.Rendered.Revision, Action: res.Action, Note: res.Note}, nil
}

// statusOf is the API server's status of err, 500 for any other error.
func statusOf(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Code != 0 {
		return int(s.Status().Code)
	}
	return http.StatusInternalServerError
}

// redactedLive is live without managedFields and, for a Secret, with every
// value of data and stringData (and kubectl's last-applied copy of it)
// replaced by a marker: the browser never gets a Secret's value.
func redactedLive(live *unstructured.Unstructured) map[string]any {
	out := live.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "metadata", "managedFields")
	if gvk := out.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		for _, field := range []string{"data", "stringData"} {
			m, ok := out.Object[field].(map[string]any)
			if !ok {
				if _, present := out.Object[field]; present {
					out.Object[field] = redactedValue
				}
				continue
			}
			for k := range m {
				m[k] = redactedValue
			}
		}
		if ann := out.GetAnnotations(); ann != nil {
			if _, ok := ann[diff.LastAppliedAnnotation]; ok {
				ann[diff.LastAppliedAnnotation] = redactedValue
				out.SetAnnotations(ann)
			}
		}
	}
	return out.Object
}

// redactedValue stands in for a Secret's value in a live object.
const redactedValue = "<redacted>"

// listEvents lists the object's Kubernetes Events (core/v1, matched by
// involvedObject.uid), newest first; or why it could not.
func listEvents(ctx context.Context, c client.Client, live *unstructured.Unstructured) ([]event, *unavailable) {
	out := []event{}
	ns := live.GetNamespace()
	if ns == "" {
		// Events about cluster-scoped objects are recorded in default.
		ns = metav1.NamespaceDefault
	}
	list := &corev1.EventList{}
	err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{"involvedObject.uid": string(live.GetUID())}, client.Limit(maxEvents))
	if err != nil {
		return out, &unavailable{Status: statusOf(err), Reason: err.Error()}
	}
	for _, e := range list.Items {
		ev := event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, FirstTimestamp: e.FirstTimestamp,
			LastTimestamp: e.LastTimestamp, Reporter: e.ReportingController}
		if ev.Reporter == "" {
			ev.Reporter = e.Source.Component
		}
		if ev.LastTimestamp.IsZero() {
			ev.LastTimestamp = metav1.NewTime(e.EventTime.Time)
		}
		if ev.FirstTimestamp.IsZero() {
			ev.FirstTimestamp = ev.LastTimestamp
		}
		if ev.Count == 0 {
			ev.Count = 1
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastTimestamp.After(out[j].LastTimestamp.Time) })
	return out, nil
}
