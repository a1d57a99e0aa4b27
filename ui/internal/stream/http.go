package stream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"plumb.dev/pkg/events"
)

// Authorizer says whether the user of a request may get an object, the
// way the API server would answer them (the server's access package: a
// SelfSubjectAccessReview with the user's identity, cached). kind is the
// involved object's kind as on the stream (Kustomization, GitRepository,
// …), namespace is empty for a cluster-scoped object.
type Authorizer interface {
	MayGet(r *http.Request, kind, namespace, name string) bool
}

const (
	// DefaultLimit is how many entries a page has when limit is not given.
	DefaultLimit = 100
	// MaxLimit is the most entries one page may have.
	MaxLimit = 500
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
	Changes   []events.Change `json:"changes"`
	Latency   string          `json:"latency,omitempty"`
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
		x.serve(w, r, auth, f, func(e entry) any { return Event{Seq: e.seq, Event: e.ev} })
	})
	mux.HandleFunc("GET /api/drift", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f := filter{kind: q.Get("kind"), namespace: q.Get("namespace"), name: q.Get("name"),
			object: q.Get("object"), reasons: []string{driftDetected, driftCorrected}}
		x.serve(w, r, auth, f, func(e entry) any { return driftEntry(e) })
	})
}

// serve answers one page of the events matching f, as shown by item.
func (x *Index) serve(w http.ResponseWriter, r *http.Request, auth Authorizer, f filter, item func(entry) any) {
	before, limit, err := paging(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	// One access check per object a request shows, however many of its
	// events there are.
	type key struct{ kind, namespace, name string }
	decided := map[key]bool{}
	allowed := func(e *events.Event) bool {
		k := key{e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name}
		ok, seen := decided[k]
		if !seen {
			ok = auth.MayGet(r, k.kind, k.namespace, k.name)
			decided[k] = ok
		}
		return ok
	}
	found, next := x.query(f, before, limit, allowed)
	page := Page{Items: make([]any, 0, len(found)), Before: next, Loading: !x.isSynced()}
	for _, e := range found {
		page.Items = append(page.Items, item(e))
	}
	writeJSON(w, http.StatusOK, page)
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

func driftEntry(e entry) DriftEntry {
	ev := e.ev
	d := DriftEntry{Seq: e.seq, Time: ev.Timestamp, Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace,
		Name: ev.InvolvedObject.Name, Revision: ev.Revision, Reason: ev.Reason, Severity: ev.Severity,
		Message: ev.Message, Changes: ev.Changes}
	if d.Changes == nil {
		d.Changes = []events.Change{}
	}
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
