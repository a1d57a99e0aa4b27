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

// livePage is the answer of GET .../live?id=: one applied object.
type livePage struct {
	ID string `json:"id"`
	// Live is the object as the cluster holds it, without managedFields,
	// Secrets' values redacted; null when it does not exist.
	Live   map[string]any `json:"live"`
	Health health.Result  `json:"health"`
	// Hook says the object is a hook of the render: it runs during a
	// sync and is not compared.
	Hook   bool          `json:"hook"`
	Diff   diffSection   `json:"diff"`
	Events eventsSection `json:"events"`
}

// diffSection is live vs Git, or why it is not available.
type diffSection struct {
	Available bool `json:"available"`
	// Status is the API server's status when it refused the comparison
	// (403 without the right to dry-run apply).
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Revision is the revision compared with.
	Revision string      `json:"revision,omitempty"`
	Action   diff.Action `json:"action,omitempty"`
	Note     string      `json:"note,omitempty"`
	Changes  []change    `json:"changes"`
}

// change is one changed field: live (before) → Git (after), and who owns
// the field in the live object.
type change struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Manager is the field manager that made the live value: the one
	// other than sync-controller's when there is one.
	Manager string `json:"manager,omitempty"`
	// Managers are all that own the field or something under it.
	Managers []string `json:"managers,omitempty"`
}

// eventsSection is the object's Kubernetes Events, newest first.
type eventsSection struct {
	Available bool    `json:"available"`
	Status    int     `json:"status,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Items     []event `json:"items"`
}

type event struct {
	Type     string      `json:"type"`
	Reason   string      `json:"reason"`
	Message  string      `json:"message"`
	Count    int32       `json:"count"`
	First    metav1.Time `json:"firstTime"`
	Last     metav1.Time `json:"lastTime"`
	Reporter string      `json:"reporter,omitempty"`
}

func (h *handlers) live(r *request) (any, error) {
	ctx := r.Context()
	a, ok := inspect.AppliedOf(r.obj)
	if !ok {
		return nil, notFound("a %s applies no objects", r.kind.Kind)
	}
	id, err := object.ParseText(r.URL.Query().Get("id"))
	if err != nil {
		return nil, badRequest("id: %v", err)
	}
	page := &livePage{ID: id.Text(), Diff: diffSection{Changes: []change{}}, Events: eventsSection{Items: []event{}}}

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
	page.Health = health.Evaluate(live)
	if live != nil {
		page.Live = redactedLive(live)
	}
	page.Hook = desired != nil && a.IsHook(desired)
	page.Diff = h.compare(ctx, r, a, desired, live, renderNote)
	if live != nil {
		page.Events = listEvents(ctx, r.client, live)
	}
	return page, nil
}

// findRendered is the object of the newest render with the id, prepared
// as sync-controller applies it; nil when the render has none (or is not
// at hand).
func findRendered(c client.Client, a *inspect.Applied, rendered []*unstructured.Unstructured, id object.ID) (*unstructured.Unstructured, error) {
	for _, o := range rendered {
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

// compare is the diff section: the dry-run apply sync-controller would make
// (pkg/inspect.Compare), with the user's identity.
func (h *handlers) compare(ctx context.Context, r *request, a *inspect.Applied, desired, live *unstructured.Unstructured, renderNote string) diffSection {
	d := diffSection{Changes: []change{}}
	switch {
	case a.Rendered == nil || renderNote != "":
		d.Reason = renderNote
		return d
	case desired == nil:
		d.Available, d.Revision = true, a.Rendered.Revision
		if live != nil {
			d.Action, d.Note = diff.Deleted, "no longer in "+a.Origin+"; a sync prunes it"
			if why := a.KeptFromPrune(live); why != "" {
				d.Action, d.Note = "", "no longer in "+a.Origin+"; "+why
			}
		} else {
			d.Note = "no longer in " + a.Origin + " and not in the cluster"
		}
		return d
	case a.IsHook(desired):
		d.Reason = "a hook: it runs during a sync and is not kept in step, so it is not compared"
		return d
	}
	ig, err := diff.NewIgnorer(a.Ignore)
	if err != nil {
		d.Reason = a.IgnoreField() + ": " + err.Error()
		return d
	}
	res := inspect.Compare(ctx, r.client, desired, ig)
	if res.Err != nil {
		d.Status, d.Reason = statusOf(res.Err), res.Err.Error()
		if apierrors.IsForbidden(res.Err) {
			d.Reason = "you may not dry-run apply this object (the comparison is a server-side dry-run apply, which needs the patch right): " + res.Err.Error()
		}
		return d
	}
	d.Available, d.Revision, d.Action, d.Note = true, a.Rendered.Revision, res.Action, res.Note
	changes := res.Changes
	if len(changes) > 0 {
		// A Secret this user cannot read hides every value (RedactAll).
		redactor, _ := a.SecretRedactor(ctx, r.client)
		changes = redactor.Changes(changes)
	}
	var managed []metav1.ManagedFieldsEntry
	if live != nil {
		managed = live.GetManagedFields()
	}
	for _, c := range changes {
		owners := drift.FieldOwners(managed, c.Path)
		d.Changes = append(d.Changes, change{Path: c.Path, Before: c.Before, After: c.After, Manager: madeBy(owners), Managers: owners})
	}
	return d
}

// madeBy is the manager that made a drifted value: one other than
// sync-controller's when there is one.
func madeBy(owners []string) string {
	for _, o := range owners {
		if o != manage.FieldManager {
			return o
		}
	}
	if len(owners) > 0 {
		return owners[0]
	}
	return ""
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
// involvedObject.uid), newest first.
func listEvents(ctx context.Context, c client.Client, live *unstructured.Unstructured) eventsSection {
	s := eventsSection{Items: []event{}}
	ns := live.GetNamespace()
	if ns == "" {
		// Events about cluster-scoped objects are recorded in default.
		ns = metav1.NamespaceDefault
	}
	list := &corev1.EventList{}
	err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{"involvedObject.uid": string(live.GetUID())}, client.Limit(maxEvents))
	if err != nil {
		s.Status, s.Reason = statusOf(err), err.Error()
		return s
	}
	s.Available = true
	for _, e := range list.Items {
		ev := event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, First: e.FirstTimestamp, Last: e.LastTimestamp,
			Reporter: e.ReportingController}
		if ev.Reporter == "" {
			ev.Reporter = e.Source.Component
		}
		if ev.Last.IsZero() {
			ev.Last = metav1.NewTime(e.EventTime.Time)
		}
		if ev.First.IsZero() {
			ev.First = ev.Last
		}
		if ev.Count == 0 {
			ev.Count = 1
		}
		s.Items = append(s.Items, ev)
	}
	sort.SliceStable(s.Items, func(i, j int) bool { return s.Items[i].Last.After(s.Items[j].Last.Time) })
	return s
}
