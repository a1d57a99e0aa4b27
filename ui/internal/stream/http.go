package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"plumb.dev/pkg/events"
)

// Authorizer says whether the user of a request may get an object, the
// way the API server would answer them (the server's access package: a
// SelfSubjectAccessReview with the user's identity, cached). namespace is
// empty for a cluster-scoped object. Each answer may ask the API server:
// a request makes at most MaxChecks of them.
type Authorizer interface {
	// MayGet is about one object of the involved object's kind as on the
	// stream (Kustomization, GitRepository, …).
	MayGet(r *http.Request, kind, namespace, name string) bool
	// MayGetAll is about every object of that kind in namespace: the
	// check a request makes first, so that a user with a namespace's
	// viewer role costs a check per namespace, not per object.
	MayGetAll(r *http.Request, kind, namespace string) bool
	// MayGetApplied is about an object a Kustomization or HelmRelease
	// applied, named by its Kind alone (a drift change's object: the
	// event has no API group), of any API group.
	MayGetApplied(r *http.Request, kind, namespace, name string) bool
}

const (
	// DefaultLimit is how many entries a page has when limit is not given.
	DefaultLimit = 100
	// MaxLimit is the most entries one page may have.
	MaxLimit = 500
)

// The bounds of one request. A user who may see little of the stream
// would otherwise have the handler scan the whole index and ask the API
// server about every object in it; past a bound the page ends early with
// `before` set where the scan stopped, and the next page goes on from
// there.
const (
	// Deadline bounds the time one page takes.
	Deadline = 5 * time.Second
	// MaxChecks bounds the access checks of one page (its involved
	// objects'; a drift page's change objects have as many again).
	MaxChecks = 500
	// MaxScanned bounds the stored events one page looks at: an index of
	// the default size (DefaultMaxEvents) is scanned whole, which takes a
	// few milliseconds (BenchmarkDriftOfOneObject); a larger one is paged
	// through in steps of it.
	MaxScanned = DefaultMaxEvents
)

// Event is one event as the stream holds it, with its stream sequence.
type Event struct {
	Seq uint64 `json:"seq"`
	*events.Event
}

// DriftEntry is one entry of the drift timeline: a DriftDetected or
// DriftCorrected event with its changes (object, path, before → after,
// field manager) and, for a correction, how long after the foreign change
// was seen it was reverted.
type DriftEntry struct {
	Seq       uint64          `json:"seq"`
	Time      time.Time       `json:"time"`
	Kind      string          `json:"kind"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name"`
	Revision  string          `json:"revision,omitempty"`
	Reason    string          `json:"reason"`
	Severity  events.Severity `json:"severity"`
	Message   string          `json:"message"`
	Changes   []DriftChange   `json:"changes"`
	Latency   string          `json:"latency,omitempty"`
}

// DriftChange is one change of a drift entry. Its values are the live
// object's: when the user may not get that object (or it cannot be told
// whether they may), before, after and manager are left out and hidden
// says so; object and path stay, as the involved object's page shows them.
type DriftChange struct {
	events.Change
	Hidden bool `json:"hidden,omitempty"`
}

// Page is the answer of both routes: items newest first; before, when set,
// is the value of before= that gives the next (older) page; loading is
// true while the stored history is still being read.
type Page struct {
	// Items are Events (/api/events) or DriftEntries (/api/drift).
	Items   []any  `json:"items"`
	Before  uint64 `json:"before,omitempty"`
	Loading bool   `json:"loading,omitempty"`
}

// The reasons of the drift timeline (plumb.dev/api/kustomize/v1's
// DriftDetectedReason and DriftCorrectedReason, which HelmReleases use too).
const (
	driftDetected  = "DriftDetected"
	driftCorrected = "DriftCorrected"
)

// Routes registers GET /api/events and GET /api/drift on mux. Every entry
// is one whose involved object auth says the request's user may get.
func (x *Index) Routes(mux *http.ServeMux, auth Authorizer) {
	if auth == nil {
		panic("stream: Routes needs an Authorizer")
	}
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f := filter{kind: q.Get("kind"), namespace: q.Get("namespace"), name: q.Get("name"), severity: q.Get("severity")}
		if reason := q.Get("reason"); reason != "" {
			f.reasons = []string{reason}
		}
		x.serve(w, r, auth, f, func(q *request, e entry) any { return q.event(e) })
	})
	mux.HandleFunc("GET /api/drift", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f := filter{kind: q.Get("kind"), namespace: q.Get("namespace"), name: q.Get("name"),
			object: q.Get("object"), reasons: []string{driftDetected, driftCorrected}}
		x.serve(w, r, auth, f, func(q *request, e entry) any { return q.driftEntry(e) })
	})
}

// serve answers one page of the events matching f, as shown by item.
func (x *Index) serve(w http.ResponseWriter, r *http.Request, auth Authorizer, f filter, item func(*request, entry) any) {
	before, limit, err := paging(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), x.deadline)
	defer cancel()
	q := &request{r: r.WithContext(ctx), auth: auth, decided: map[objectKey]bool{}, namespaces: map[objectKey]bool{},
		applied: map[objectKey]bool{}, checks: MaxChecks, changeChecks: MaxChecks}
	found, next := x.query(f, before, limit, MaxScanned, q.allowed)
	page := Page{Items: make([]any, 0, len(found)), Before: next, Loading: !x.isSynced()}
	for _, e := range found {
		page.Items = append(page.Items, item(q, e))
	}
	writeJSON(w, http.StatusOK, page)
}

// request is what one page has decided and may still ask: one access
// check per kind and namespace, then per object a page shows however many
// of its events there are, within the page's budget and deadline.
type request struct {
	r    *http.Request
	auth Authorizer
	// decided holds the objects' answers, namespaces the answers for all
	// of a kind in a namespace (name ""), applied those of drift changes'
	// objects.
	decided, namespaces, applied map[objectKey]bool
	// checks and changeChecks are the checks left.
	checks, changeChecks int
}

type objectKey struct{ kind, namespace, name string }

// allowed says whether the page may show e; stop when the page's budget
// or deadline ran out before it could tell.
func (q *request) allowed(e *events.Event) (ok, stop bool) {
	o := e.InvolvedObject
	ns := objectKey{kind: o.Kind, namespace: o.Namespace}
	all, seen := q.namespaces[ns]
	if !seen {
		if !q.spend(&q.checks) {
			return false, true
		}
		all = q.auth.MayGetAll(q.r, o.Kind, o.Namespace)
		q.namespaces[ns] = all
	}
	if all {
		return true, false
	}
	k := objectKey{o.Kind, o.Namespace, o.Name}
	ok, seen = q.decided[k]
	if !seen {
		if !q.spend(&q.checks) {
			return false, true
		}
		ok = q.auth.MayGet(q.r, k.kind, k.namespace, k.name)
		q.decided[k] = ok
	}
	return ok, false
}

// spend takes one check out of budget, unless it or the deadline ran out.
func (q *request) spend(budget *int) bool {
	if *budget <= 0 || q.r.Context().Err() != nil {
		return false
	}
	*budget--
	return true
}

// mayShowChange says whether the user may get the object a drift change
// is about: its text is <Kind>/<namespace>/<name>, or <Kind>/<name> for
// a cluster-scoped object. Text of another shape, a check beyond the
// budget or deadline, is a no.
func (q *request) mayShowChange(object string) bool {
	parts := strings.Split(object, "/")
	var k objectKey
	switch len(parts) {
	case 2:
		k = objectKey{kind: parts[0], name: parts[1]}
	case 3:
		k = objectKey{kind: parts[0], namespace: parts[1], name: parts[2]}
	default:
		return false
	}
	if k.kind == "" || k.name == "" {
		return false
	}
	ok, seen := q.applied[k]
	if !seen {
		if !q.spend(&q.changeChecks) {
			return false
		}
		ok = q.auth.MayGetApplied(q.r, k.kind, k.namespace, k.name)
		q.applied[k] = ok
	}
	return ok
}

// paging reads before= and limit=, capping limit at MaxLimit.
func paging(r *http.Request) (before uint64, limit int, err error) {
	q := r.URL.Query()
	limit = DefaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("limit %q: want a positive number", truncate(s))
		}
		limit = min(n, MaxLimit)
	}
	if s := q.Get("before"); s != "" {
		if before, err = strconv.ParseUint(s, 10, 64); err != nil || before == 0 {
			return 0, 0, fmt.Errorf("before %q: want a stream sequence (a positive number)", truncate(s))
		}
	}
	return before, limit, nil
}

// truncate shortens a query value quoted back in an error.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// event shows an event of the history, its drift changes as driftEntry
// shows them: the values and manager of a change only for an object the
// user may get. (A drift event carries them in both routes.)
func (q *request) event(e entry) Event {
	if len(e.ev.Changes) == 0 {
		return Event{Seq: e.seq, Event: e.ev}
	}
	ev := *e.ev // the index's copy is every reader's: never changed
	ev.Changes = make([]events.Change, 0, len(e.ev.Changes))
	for _, c := range q.changes(e.ev.Changes) {
		ev.Changes = append(ev.Changes, c.Change)
	}
	return Event{Seq: e.seq, Event: &ev}
}

// changes is the one rule of what a user sees of drift changes: a change
// of an object the user may get whole, of any other only its object and
// path, marked hidden — no value, no field manager.
func (q *request) changes(cs []events.Change) []DriftChange {
	out := make([]DriftChange, 0, len(cs))
	for _, c := range cs {
		if q.mayShowChange(c.Object) {
			out = append(out, DriftChange{Change: c})
			continue
		}
		out = append(out, DriftChange{Change: events.Change{Object: c.Object, Path: c.Path}, Hidden: true})
	}
	return out
}

// driftEntry shows a drift event, with the values of each change only
// for an object the user may get (changes).
func (q *request) driftEntry(e entry) DriftEntry {
	ev := e.ev
	d := DriftEntry{Seq: e.seq, Time: ev.Timestamp, Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace,
		Name: ev.InvolvedObject.Name, Revision: ev.Revision, Reason: ev.Reason, Severity: ev.Severity,
		Message: ev.Message, Changes: q.changes(ev.Changes)}
	if ev.Reason == driftCorrected {
		d.Latency = latency(ev.Metadata["latency"])
	}
	return d
}

// latency shows sync-controller's latency metadata (a Go duration) to the
// millisecond; a value that does not parse is left out, not passed on.
func latency(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return ""
	}
	return d.Round(time.Millisecond).String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
