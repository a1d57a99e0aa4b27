package overview

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/kinds"
)

// Paging bounds of GET /api/overview.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// reviewConcurrency bounds the access reviews one request makes at once
// (a user allowed namespace by namespace, with many namespaces).
const reviewConcurrency = 8

// Viewer answers whether a user may do something; *access.Session is one.
type Viewer interface {
	MayDo(ctx context.Context, verb, group, resource, namespace, name string) bool
}

// Handler serves the overview from a Store.
type Handler struct {
	Store *Store
	// APITimeout bounds the access reviews of one request
	// (httpapi.APITimeout when zero): a review that does not answer in
	// time is a "no".
	APITimeout time.Duration
}

// context is r's context bounded by the handler's API timeout.
func (h *Handler) context(r *http.Request) (context.Context, context.CancelFunc) {
	if h.APITimeout > 0 {
		return httpapi.WithAPITimeout(r, h.APITimeout)
	}
	return httpapi.WithAPITimeout(r, httpapi.APITimeout)
}

// Page is the answer of GET /api/overview.
type Page struct {
	// Total is how many rows match every filter.
	Total int `json:"total"`
	// Counts are the rows by status among those matching the filters but
	// status, so the counts stay a summary while one status is shown.
	Counts map[string]int `json:"counts"`
	Items  []*Row         `json:"items"`
}

// Query is the filters and the page asked for.
type Query struct {
	// Kind is a Kind ("Kustomization"), empty for all.
	Kind, Namespace, Status string
	// Text is matched, case-insensitively, within the kind, namespace,
	// name and revision.
	Text          string
	Offset, Limit int
}

// Overview serves GET /api/overview.
func (h *Handler) Overview(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		httpapi.Error(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := h.context(r)
	defer cancel()
	httpapi.JSON(w, http.StatusOK, h.Page(ctx, viewerOf(r), q))
}

// parseQuery reads and checks the query string.
func parseQuery(r *http.Request) (Query, error) {
	v := r.URL.Query()
	q := Query{Namespace: v.Get("namespace"), Status: v.Get("status"), Text: strings.ToLower(v.Get("q")), Limit: DefaultLimit}
	if k := v.Get("kind"); k != "" {
		kind, ok := kinds.Lookup(k)
		if !ok {
			return q, &badQuery{"kind", k}
		}
		q.Kind = kind.GVK.Kind
	}
	if q.Status != "" && !slices.Contains(statuses, q.Status) {
		return q, &badQuery{"status", q.Status}
	}
	for _, p := range []struct {
		name string
		to   *int
	}{{"offset", &q.Offset}, {"limit", &q.Limit}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, &badQuery{p.name, s}
		}
		*p.to = n
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	q.Limit = min(q.Limit, MaxLimit)
	return q, nil
}

type badQuery struct{ name, value string }

func (e *badQuery) Error() string {
	switch e.name {
	case "kind":
		return "kind " + strconv.Quote(e.value) + " is not one the overview shows"
	case "status":
		return "status " + strconv.Quote(e.value) + " is none of " + strings.Join(statuses, ", ")
	}
	return e.name + " must be a number of 0 or more, not " + strconv.Quote(e.value)
}

// statuses are the count keys, in the order the page shows them.
var statuses = []string{StatusReady, StatusNotReady, StatusProgressing, StatusSuspended}

// Page filters, counts and pages the rows viewer may see.
func (h *Handler) Page(ctx context.Context, viewer Viewer, q Query) Page {
	rows := h.Store.Rows()
	visible := visibility(ctx, viewer, rows)
	page := Page{Counts: make(map[string]int, len(statuses)), Items: []*Row{}}
	for _, s := range statuses {
		page.Counts[s] = 0
	}
	for _, r := range rows {
		if (q.Kind != "" && r.Kind != q.Kind) || (q.Namespace != "" && r.Namespace != q.Namespace) ||
			!visible[scope{r.Kind, r.Namespace}] || (q.Text != "" && !matches(r, q.Text)) {
			continue
		}
		page.Counts[r.status]++
		if q.Status != "" && r.status != q.Status {
			continue
		}
		if page.Total >= q.Offset && len(page.Items) < q.Limit {
			page.Items = append(page.Items, r)
		}
		page.Total++
	}
	return page
}

// matches reports whether the lower-case text is in the row's kind,
// namespace, name or revision.
func matches(r *Row, text string) bool {
	for _, s := range []string{r.Name, r.Namespace, r.Kind, r.Revision} {
		if strings.Contains(strings.ToLower(s), text) {
			return true
		}
	}
	return false
}

// scope is one kind in one namespace: the unit access is decided in.
type scope struct{ kind, namespace string }

// visibility decides, for each kind and namespace the rows are in, whether
// viewer may list that kind there: first for all namespaces at once (an
// administrator or a cluster-wide viewer: one review per kind), then per
// namespace for the kinds that answer no.
func visibility(ctx context.Context, viewer Viewer, rows []*Row) map[scope]bool {
	visible := map[scope]bool{}
	if viewer == nil {
		return visible
	}
	namespaces := map[string][]string{} // kind → namespaces, in order
	for _, r := range rows {
		sc := scope{r.Kind, r.Namespace}
		if _, seen := visible[sc]; !seen {
			visible[sc] = false
			namespaces[r.Kind] = append(namespaces[r.Kind], r.Namespace)
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		sema = make(chan struct{}, reviewConcurrency)
	)
	for kind, nss := range namespaces {
		k, _ := kinds.Lookup(kind)
		if viewer.MayDo(ctx, "list", k.Group(), k.Resource, "", "") {
			mu.Lock()
			for _, ns := range nss {
				visible[scope{kind, ns}] = true
			}
			mu.Unlock()
			continue
		}
		for _, ns := range nss {
			wg.Add(1)
			sema <- struct{}{}
			go func() {
				defer func() { <-sema; wg.Done() }()
				if viewer.MayDo(ctx, "list", k.Group(), k.Resource, ns, "") {
					mu.Lock()
					visible[scope{kind, ns}] = true
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	return visible
}

// viewerOf is the request's session as a Viewer, nil without one (so
// nothing is visible).
func viewerOf(r *http.Request) Viewer {
	if s := access.From(r); s != nil {
		return s
	}
	return nil
}

// NamespaceList is the answer of GET /api/namespaces.
type NamespaceList struct {
	Namespaces []string `json:"namespaces"`
}

// Namespaces serves GET /api/namespaces: the namespaces the user sees
// rows in, sorted.
func (h *Handler) Namespaces(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.context(r)
	defer cancel()
	rows := h.Store.Rows()
	visible := visibility(ctx, viewerOf(r), rows)
	out := NamespaceList{Namespaces: []string{}}
	seen := map[string]bool{}
	for sc, ok := range visible {
		if ok && !seen[sc.namespace] {
			seen[sc.namespace] = true
			out.Namespaces = append(out.Namespaces, sc.namespace)
		}
	}
	slices.Sort(out.Namespaces)
	httpapi.JSON(w, http.StatusOK, out)
}
