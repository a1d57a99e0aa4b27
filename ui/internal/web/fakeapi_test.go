package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI stands in for the ui server's /api routes in the front end's
// tests: the JSON shapes of docs/design/ui.md, from memory, with a session
// cookie and the CSRF check, so a test is about what the page does with
// them. The real server is tested against the real API server in e2e/.
type fakeAPI struct {
	mu        sync.Mutex
	rows      []map[string]any // the overview's rows, sorted by kind, namespace, name
	posts     []fakePost
	queries   map[string][]url.Values // path → queries seen, in order
	newDrift  []map[string]any        // drift entries added by the test, newest first
	listeners []chan string
	drop      chan struct{} // closed by dropStreams: every open /api/live ends
}

type fakePost struct {
	Path string
	Body map[string]any
}

const (
	fakeToken  = "good-token"
	fakeSecret = "s3cret"
	fakeCSRF   = "csrf-7f3a"
	// slowReason is a reason filter whose first page the stand-in ends
	// early, empty, with a before cursor.
	slowReason = "SlowToCheck"
	fakeUser   = "jane@example.com"
	// hostileName is a name an attacker might give an object: if it ever
	// reached innerHTML it would run.
	hostileName = `<img src=x onerror="window.__pwned=1">`
	// forbiddenName is the Kustomization the user may read but not change.
	forbiddenName = "app-0001"
	// rerenderedName is the Kustomization whose history holds two renders
	// of one revision: firstRenderDigest, then rerenderedDigest.
	rerenderedName    = "app-0002"
	firstRenderDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	rerenderedDigest  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	// manualName is the Kustomization with syncPolicy Manual whose
	// render waits for a sync (status.outOfSync).
	manualName = "app-0004"
)

func newFakeAPI() *fakeAPI {
	f := &fakeAPI{queries: map[string][]url.Values{}, drop: make(chan struct{})}
	now := time.Now().UTC()
	for i := range 5 {
		f.rows = append(f.rows, row("GitRepository", fmt.Sprintf("team-%d", i), "apps", "True", false, now))
	}
	for i := range 1000 {
		r := row("Kustomization", fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%04d", i), "True", false, now.Add(-time.Duration(i)*time.Second))
		switch {
		case i%97 == 5:
			r["ready"], r["reason"], r["message"] = "False", "HealthCheckFailed", "Deployment web is Degraded"
			r["health"] = map[string]int{"healthy": 10, "degraded": 2}
		case i%101 == 7:
			r["ready"], r["reason"] = "Unknown", "Progressing"
			r["health"] = map[string]int{"healthy": 8, "progressing": 4}
		case i%211 == 3:
			r["suspended"] = true
		}
		if i == 4 {
			r["syncPolicy"] = "Manual"
			r["outOfSync"] = map[string]any{"revision": "main@sha1:fedcba9876543210fedcba9876543210fedcba98",
				"create": []string{"ConfigMap/team-4/new"}, "creates": 1,
				"change": []string{"Deployment/team-4/web"}, "changes": 1}
		}
		if i%50 == 10 {
			r["drift"] = map[string]any{"state": "drifted", "count": 2, "lastDetected": now.Format(time.RFC3339)}
		}
		f.rows = append(f.rows, r)
	}
	f.rows = append(f.rows, row("Kustomization", "zz-evil", hostileName, "True", false, now))
	slices.SortFunc(f.rows, func(a, b map[string]any) int {
		return strings.Compare(a["kind"].(string)+"/"+a["namespace"].(string)+"/"+a["name"].(string),
			b["kind"].(string)+"/"+b["namespace"].(string)+"/"+b["name"].(string))
	})
	return f
}

func row(kind, ns, name, ready string, suspended bool, last time.Time) map[string]any {
	return map[string]any{
		"kind": kind, "namespace": ns, "name": name, "ready": ready, "reason": "ReconciliationSucceeded",
		"message": "Applied revision", "suspended": suspended, "revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
		"health": map[string]int{"healthy": 12}, "drift": map[string]any{"state": "none", "count": 0},
		"lastSync": last.Format(time.RFC3339), "source": map[string]any{"kind": "GitRepository", "namespace": ns, "name": "apps"},
	}
}

func statusOf(r map[string]any) string {
	switch {
	case r["suspended"] == true:
		return "Suspended"
	case r["ready"] == "True":
		return "Ready"
	case r["ready"] == "False":
		return "NotReady"
	}
	return "Progressing"
}

// start serves the app and the fake API on a test server.
func (f *fakeAPI) start(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/", Handler())
	mux.HandleFunc("POST /api/login", f.login)
	mux.HandleFunc("GET /api/session", f.signedIn(f.session))
	mux.HandleFunc("POST /api/logout", f.signedIn(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "", Path: "/", MaxAge: -1})
		reply(w, 200, map[string]any{})
	}))
	mux.HandleFunc("GET /api/overview", f.signedIn(f.overview))
	mux.HandleFunc("GET /api/namespaces", f.signedIn(f.namespaces))
	mux.HandleFunc("GET /api/objects/{kind}/{ns}/{name}", f.signedIn(f.object))
	mux.HandleFunc("GET /api/objects/{kind}/{ns}/{name}/live", f.signedIn(f.live))
	mux.HandleFunc("GET /api/objects/{kind}/{ns}/{name}/revisions", f.signedIn(f.revisions))
	mux.HandleFunc("POST /api/objects/{kind}/{ns}/{name}/{action}", f.signedIn(f.action))
	mux.HandleFunc("GET /api/events", f.signedIn(f.events))
	mux.HandleFunc("GET /api/drift", f.signedIn(f.drift))
	mux.HandleFunc("GET /api/live", f.signedIn(f.stream))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "ok" {
			reply(w, 401, map[string]string{"error": "not signed in"})
			return
		}
		// As the server's gate: every request carries the value, a GET
		// may carry it as ?csrf= (EventSource sets no headers).
		got := r.Header.Get("X-Plumb-CSRF")
		if got == "" && r.Method == http.MethodGet {
			got = r.URL.Query().Get("csrf")
		}
		if got != fakeCSRF {
			reply(w, 403, map[string]string{"error": "missing or wrong X-Plumb-CSRF"})
			return
		}
		f.mu.Lock()
		f.queries[r.URL.Path] = append(f.queries[r.URL.Path], r.URL.Query())
		f.mu.Unlock()
		next(w, r)
	}
}

func (f *fakeAPI) login(w http.ResponseWriter, r *http.Request) {
	var body struct{ Token, Secret string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil ||
		(body.Token != fakeToken && body.Secret != fakeSecret) {
		reply(w, 401, map[string]string{"error": "the API server did not accept the token"})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "ok", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	reply(w, 200, map[string]any{"user": fakeUser, "groups": []string{"dev"}, "mode": "token", "csrf": fakeCSRF})
}

func (f *fakeAPI) session(w http.ResponseWriter, r *http.Request) {
	reply(w, 200, map[string]any{"user": fakeUser, "groups": []string{"dev"}, "mode": "token", "csrf": fakeCSRF})
}

func (f *fakeAPI) overview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	counts := map[string]int{"Ready": 0, "NotReady": 0, "Progressing": 0, "Suspended": 0}
	var items []map[string]any
	for _, row := range f.rows {
		if k := q.Get("kind"); k != "" && !strings.EqualFold(k, row["kind"].(string)) {
			continue
		}
		if ns := q.Get("namespace"); ns != "" && ns != row["namespace"] {
			continue
		}
		if text := q.Get("q"); text != "" && !strings.Contains(row["namespace"].(string)+"/"+row["name"].(string), text) {
			continue
		}
		counts[statusOf(row)]++
		if s := q.Get("status"); s != "" && s != statusOf(row) {
			continue
		}
		items = append(items, row)
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 500)
	total := len(items)
	offset = min(max(offset, 0), total)
	reply(w, 200, map[string]any{"total": total, "counts": counts, "items": items[offset:min(offset+limit, total)]})
}

func (f *fakeAPI) namespaces(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, row := range f.rows {
		if ns := row["namespace"].(string); !slices.Contains(names, ns) {
			names = append(names, ns)
		}
	}
	slices.Sort(names)
	reply(w, 200, map[string]any{"namespaces": names})
}

func (f *fakeAPI) find(r *http.Request) map[string]any {
	for _, row := range f.rows {
		if strings.EqualFold(row["kind"].(string), r.PathValue("kind")) && row["namespace"] == r.PathValue("ns") && row["name"] == r.PathValue("name") {
			return row
		}
	}
	return nil
}

// object answers for a Kustomization with a tree of 2,000 objects: 400
// Deployments, each owning a ReplicaSet that owns three Pods.
func (f *fakeAPI) object(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	row := f.find(r)
	if row == nil {
		reply(w, 404, map[string]string{"error": "not found"})
		return
	}
	ns := row["namespace"].(string)
	var tree []map[string]any
	for d := range 400 {
		name := fmt.Sprintf("web-%d", d)
		var pods []map[string]any
		for p := range 3 {
			pods = append(pods, node("", "v1", "Pod", ns, fmt.Sprintf("%s-7d9f-%d", name, p), "Healthy", "Running", nil))
		}
		health, reason := "Healthy", "3/3 replicas available"
		if d == 1 {
			health, reason = "Degraded", "ProgressDeadlineExceeded"
		}
		rs := node("apps", "v1", "ReplicaSet", ns, name+"-7d9f", "Healthy", "", pods)
		tree = append(tree, node("apps", "v1", "Deployment", ns, name, health, reason, []map[string]any{rs}))
	}
	out := map[string]any{
		"kind": row["kind"], "namespace": ns, "name": row["name"],
		"ready": row["ready"], "reason": row["reason"], "message": row["message"], "suspended": row["suspended"],
		"revision": row["revision"], "lastSync": row["lastSync"],
		"source": map[string]any{"kind": "GitRepository", "namespace": ns, "name": "apps", "revision": row["revision"]},
		"conditions": []map[string]any{
			{"type": "Ready", "status": row["ready"], "reason": row["reason"], "message": row["message"], "lastTransitionTime": row["lastSync"]},
			{"type": "Healthy", "status": "True", "reason": "Succeeded", "message": "all objects are healthy", "lastTransitionTime": row["lastSync"]},
		},
		"sync":       map[string]any{"phase": "Succeeded", "wave": 2},
		"syncPolicy": row["syncPolicy"], "outOfSync": row["outOfSync"],
		"tree": tree,
		"hooks": []map[string]any{
			{"id": "batch/Job/" + ns + "/migrate", "kind": "Job", "namespace": ns, "name": "migrate", "hook": "PreSync", "phase": "Succeeded", "outcome": "Healthy", "message": "job completed"},
		},
	}
	if msg, ok := row["rolledBack"].(string); ok {
		out["conditions"] = append(out["conditions"].([]map[string]any),
			map[string]any{"type": "RolledBack", "status": "True", "reason": "RolledBack", "message": msg, "lastTransitionTime": row["lastSync"]})
	}
	reply(w, 200, out)
}

func node(group, version, kind, ns, name, health, reason string, children []map[string]any) map[string]any {
	return map[string]any{"id": group + "/" + kind + "/" + ns + "/" + name, "group": group, "version": version, "kind": kind,
		"namespace": ns, "name": name, "health": health, "reason": reason, "children": children}
}

func (f *fakeAPI) live(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if strings.HasSuffix(id, "/locked") {
		// As the server answers a user who may not dry-run an apply.
		reply(w, 200, map[string]any{"id": id, "diff": []any{}, "health": map[string]any{"status": "Healthy"},
			"diffUnavailable": map[string]any{"status": 403, "reason": "deployments.apps \"locked\" is forbidden: User \"jane\" cannot patch"}})
		return
	}
	reply(w, 200, map[string]any{
		"id":     id,
		"object": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": 5}},
		"health": map[string]any{"status": "Healthy", "reason": "5/5 replicas available"},
		"diff": []map[string]any{
			{"path": "spec.replicas", "before": "5", "after": "2", "manager": "kubectl-edit"},
			{"path": "metadata.labels.tier", "before": `"web"`, "after": "", "manager": "kubectl-label"},
		},
		"events": []map[string]any{
			{"type": "Normal", "reason": "ScalingReplicaSet", "message": "Scaled up replica set web-7d9f to 5", "count": 1, "lastTimestamp": time.Now().UTC().Format(time.RFC3339)},
		},
	})
}

func (f *fakeAPI) revisions(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("from") != "" {
		reply(w, 200, map[string]any{"diff": []map[string]any{
			{"object": "apps/Deployment/team-0/web-0", "path": "spec.template.spec.containers[0].image", "before": `"web:1.4"`, "after": `"web:1.5"`},
		}})
		return
	}
	now := time.Now().UTC()
	// A Kustomization's status.history as the server lists it: ids are
	// render digests.
	entry := func(revision, digest, status string, syncs int, ago time.Duration) map[string]any {
		return map[string]any{"id": digest, "revision": revision, "digest": digest, "status": status, "syncs": syncs,
			"time": now.Add(-ago).Format(time.RFC3339)}
	}
	if r.PathValue("name") == rerenderedName {
		// A spec change rendered main@bbbb anew: two renders of one revision.
		reply(w, 200, map[string]any{"revisions": []map[string]any{
			entry("main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", rerenderedDigest, "HealthCheckFailed", 1, 0),
			entry("main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", firstRenderDigest, "Succeeded", 2, time.Hour),
			entry("main@sha1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sha256:"+strings.Repeat("a", 64), "Succeeded", 1, 2*time.Hour),
		}})
		return
	}
	reply(w, 200, map[string]any{"revisions": []map[string]any{
		entry("main@sha1:cccccccccccccccccccccccccccccccccccccccc", "sha256:"+strings.Repeat("c", 64), "Succeeded", 1, 0),
		entry("main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "sha256:"+strings.Repeat("b", 64), "Succeeded", 1, time.Hour),
		entry("main@sha1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sha256:"+strings.Repeat("d", 64), "HealthCheckFailed", 3, 2*time.Hour),
	}})
}

func (f *fakeAPI) action(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
	f.mu.Lock()
	f.posts = append(f.posts, fakePost{Path: r.URL.Path, Body: body})
	row := f.find(r)
	f.mu.Unlock()
	if row == nil {
		reply(w, 404, map[string]string{"error": "not found"})
		return
	}
	if row["name"] == forbiddenName {
		reply(w, 403, map[string]string{"error": `kustomizations.plumb.dev "app-0001" is forbidden: User "jane@example.com" cannot patch resource`})
		return
	}
	switch r.PathValue("action") {
	case "suspend", "resume":
		f.mu.Lock()
		row["suspended"] = r.PathValue("action") == "suspend"
		f.mu.Unlock()
		reply(w, 200, map[string]any{})
	case "reconcile":
		reply(w, 200, map[string]any{})
	case "sync":
		// As the real server: 409 for an object that syncs on its own.
		if row["syncPolicy"] != "Manual" {
			reply(w, 409, map[string]string{"error": "Kustomization has syncPolicy Automatic and syncs on its own"})
			return
		}
		f.mu.Lock()
		delete(row, "outOfSync")
		f.mu.Unlock()
		reply(w, 200, map[string]any{"requested": "t"})
	case "rollback":
		// As sync-controller then says it: RolledBack=True.
		f.mu.Lock()
		row["rolledBack"] = fmt.Sprintf("rolled back to revision main@sha1:bbbbbbb (render %.19s); revision main@sha1:ccccccc is rendered but not applied until plumb resume kustomization %s", body["digest"], row["name"])
		f.mu.Unlock()
		reply(w, 200, map[string]any{})
	case "ignore":
		// The rule in the form asked for, as the real handler words it.
		rule := "paths: [" + fmt.Sprint(body["path"]) + "]"
		switch body["as"] {
		case "jq":
			rule = "jqPathExpressions: ['." + fmt.Sprint(body["path"]) + "']"
		case "manager":
			rule = "managedFieldsManagers: [" + fmt.Sprint(body["manager"]) + "]"
		}
		reply(w, 200, map[string]any{"mayApply": true, "yaml": "spec:\n  drift:\n    ignore:\n      - target: {kind: Deployment, name: web-0}\n        " + rule + "\n"})
	default:
		reply(w, 404, map[string]string{"error": "no such action"})
	}
}

// events serves 250 events, seq 1..250, newest first.
func (f *fakeAPI) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	before, _ := strconv.Atoi(q.Get("before"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	if q.Get("reason") == slowReason && before == 0 {
		// As the server answers when a page ran out of its time or checks
		// before it found anything: no items, and where to go on.
		reply(w, 200, map[string]any{"items": []any{}, "before": 120})
		return
	}
	base := time.Now().UTC().Add(-time.Hour)
	var items []map[string]any
	for seq := 250; seq >= 1 && len(items) < limit; seq-- {
		if before > 0 && seq >= before {
			continue
		}
		sev, reason := "info", "ReconciliationSucceeded"
		if seq%10 == 0 {
			sev, reason = "error", "HealthCheckFailed"
		}
		ns, name := fmt.Sprintf("team-%d", seq%10), fmt.Sprintf("app-%04d", seq)
		if s := q.Get("severity"); s != "" && s != sev {
			continue
		}
		if s := q.Get("namespace"); s != "" && s != ns {
			continue
		}
		if s := q.Get("reason"); s != "" && s != reason {
			continue
		}
		items = append(items, map[string]any{
			"seq": seq, "schemaVersion": "plumb.dev/event/v1", "id": fmt.Sprintf("ev-%d", seq),
			"involvedObject": map[string]any{"kind": "Kustomization", "namespace": ns, "name": name},
			"severity":       sev, "reason": reason, "message": "Applied revision main@sha1:0123456", "revision": "main@sha1:0123456",
			"timestamp": base.Add(time.Duration(seq) * time.Second).Format(time.RFC3339), "reportingController": "sync-controller",
		})
	}
	reply(w, 200, map[string]any{"items": items})
}

func (f *fakeAPI) drift(w http.ResponseWriter, r *http.Request) {
	base := time.Now().UTC().Add(-10 * time.Minute)
	change := func(manager string) []map[string]any {
		return []map[string]any{{"object": "apps/Deployment/team-0/web-0", "path": "spec.replicas", "before": "5", "after": "2", "manager": manager}}
	}
	items := []map[string]any{
		{"seq": 42, "time": base.Add(3 * time.Second).Format(time.RFC3339), "kind": "Kustomization", "namespace": "team-0", "name": "app-0000",
			"revision": "main@sha1:0123456789abcdef", "reason": "DriftCorrected", "changes": change("kubectl-edit"), "latency": "183ms"},
		{"seq": 41, "time": base.Format(time.RFC3339), "kind": "Kustomization", "namespace": "team-0", "name": "app-0000",
			"revision": "main@sha1:0123456789abcdef", "reason": "DriftDetected", "changes": change("kubectl-edit")},
		{"seq": 17, "time": base.Add(-time.Hour).Format(time.RFC3339), "kind": "Kustomization", "namespace": "team-3", "name": "app-0003",
			"revision": "main@sha1:0123456789abcdef", "reason": "DriftDetected",
			"changes": append(change("helm"), map[string]any{"object": "Secret/kube-system/admin", "path": "data.token", "hidden": true})},
	}
	f.mu.Lock()
	items = append(slices.Clone(f.newDrift), items...)
	f.mu.Unlock()
	if n := r.URL.Query().Get("name"); n != "" {
		items = slices.DeleteFunc(items, func(e map[string]any) bool { return e["name"] != n })
	}
	reply(w, 200, map[string]any{"items": items})
}

// stream is /api/live: it sends what push() is given.
func (f *fakeAPI) stream(w http.ResponseWriter, r *http.Request) {
	ch := make(chan string, 16)
	f.mu.Lock()
	f.listeners = append(f.listeners, ch)
	drop := f.drop
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	// A short reconnection delay, so a dropped stream is back soon in tests.
	_, _ = io.WriteString(w, "retry: 100\n: connected\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-drop:
			return
		case msg := <-ch:
			_, _ = fmt.Fprintf(w, "event: change\ndata: %s\n\n", msg)
			fl.Flush()
		}
	}
}

// push sends a change to every open /api/live.
func (f *fakeAPI) push(kind, ns, name, reason string) {
	b, _ := json.Marshal(map[string]string{"kind": kind, "namespace": ns, "name": name, "reason": reason})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.listeners {
		select {
		case ch <- string(b):
		default: // a closed page's stream: nobody reads it
		}
	}
}

// dropStreams ends every open /api/live, as a restarted server would.
func (f *fakeAPI) dropStreams() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.drop)
	f.drop = make(chan struct{})
	f.listeners = nil
}

func (f *fakeAPI) listening() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.listeners) > 0
}

func (f *fakeAPI) postsTo(suffix string) []fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakePost
	for _, p := range f.posts {
		if strings.HasSuffix(p.Path, suffix) {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakeAPI) queriesOf(path string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries[path])
}

// set changes a field of the overview row kind/ns/name.
func (f *fakeAPI) set(kind, ns, name, field string, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, row := range f.rows {
		if row["kind"] == kind && row["namespace"] == ns && row["name"] == name {
			row[field] = v
		}
	}
}
