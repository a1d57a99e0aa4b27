package notifier

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	notificationv1 "plumb.dev/api/notification/v1"
)

// The stand-ins of the Git hosts: each checks a commit status request as
// its host does (method, path with owner/repo/sha, authentication, a body
// decoded strictly with the host's field names, required fields, allowed
// states, length limits) and answers as the host does.

const testSHA = "4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a"

// hostContract is what one host requires of a status request.
type hostContract struct {
	typ string
	// address is the repository URL on the stand-in at base.
	address func(base string) string
	// token is the Secret's token key for the type.
	token string
	// path matches the status request's path (escaped), capturing the sha.
	path *regexp.Regexp
	// authorized checks the credentials the way the host does.
	authorized func(r *http.Request) bool
	// unauthorized is the host's answer to bad credentials.
	unauthorized int
	// decode reads the body strictly into the host's schema and returns
	// the status it says, or the host's refusal code.
	decode func(body []byte) (received, int)
	// created is the host's success code.
	created int
	// list matches the path of the host's status list (capturing the
	// sha), and listed renders the answer from the statuses of that
	// commit, oldest first.
	list   *regexp.Regexp
	listed func(statuses []received) any
}

// latestPerContext is the statuses' latest of each context, newest first
// (GitHub's and Gitea's combined status, Azure DevOps' latestOnly).
func latestPerContext(statuses []received) []received {
	var out []received
	seen := map[string]bool{}
	for i := len(statuses) - 1; i >= 0; i-- {
		if !seen[statuses[i].Context] {
			seen[statuses[i].Context] = true
			out = append(out, statuses[i])
		}
	}
	return out
}

// received is a status as a stand-in understood it.
type received struct {
	SHA, State, Context, Description string
	Extra                            map[string]string
}

// stateIn checks a state against the host's allowed values.
func stateIn(state string, allowed ...string) bool { return slices.Contains(allowed, state) }

var contracts = []hostContract{
	{
		typ:          notificationv1.GitHubProvider,
		address:      func(base string) string { return base + "/org/repo" },
		token:        testToken,
		path:         regexp.MustCompile(`^/api/v3/repos/org/repo/statuses/([0-9a-f]{40})$`),
		authorized:   hasAuth("Bearer " + testToken),
		unauthorized: http.StatusUnauthorized,
		created:      http.StatusCreated,
		list:         regexp.MustCompile(`^/api/v3/repos/org/repo/commits/([0-9a-f]{40})/status$`),
		listed: func(statuses []received) any {
			type status struct {
				ID          int    `json:"id"`
				State       string `json:"state"`
				Description string `json:"description"`
				Context     string `json:"context"`
			}
			out := []status{}
			for i, st := range latestPerContext(statuses) {
				out = append(out, status{ID: i + 1, State: st.State, Description: st.Description, Context: st.Context})
			}
			return map[string]any{"state": "pending", "sha": testSHA, "total_count": len(out), "statuses": out}
		},
		decode: func(b []byte) (received, int) {
			var s struct {
				State       string  `json:"state"`
				TargetURL   *string `json:"target_url"`
				Description *string `json:"description"`
				Context     string  `json:"context"`
			}
			if strictJSON(b, &s) != nil || !stateIn(s.State, "error", "failure", "pending", "success") {
				return received{}, http.StatusUnprocessableEntity
			}
			desc := ""
			if s.Description != nil {
				desc = *s.Description
			}
			if utf8.RuneCountInString(desc) > 140 {
				return received{}, http.StatusUnprocessableEntity // description is too long (maximum is 140 characters)
			}
			return received{State: s.State, Context: s.Context, Description: desc}, 0
		},
	},
	{
		typ:     notificationv1.GitLabProvider,
		address: func(base string) string { return base + "/group/sub/project.git" },
		token:   testToken,
		path:    regexp.MustCompile(`^/api/v4/projects/group%2Fsub%2Fproject/statuses/([0-9a-f]{40})$`),
		list:    regexp.MustCompile(`^/api/v4/projects/group%2Fsub%2Fproject/repository/commits/([0-9a-f]{40})/statuses$`),
		listed: func(statuses []received) any {
			type status struct {
				ID          int    `json:"id"`
				SHA         string `json:"sha"`
				Status      string `json:"status"`
				Name        string `json:"name"`
				Description string `json:"description"`
			}
			out := []status{}
			for i, st := range statuses {
				out = append(out, status{ID: i + 1, SHA: st.SHA, Status: st.State, Name: st.Context, Description: st.Description})
			}
			return out
		},
		authorized: func(r *http.Request) bool {
			return r.Header.Get("PRIVATE-TOKEN") == testToken
		},
		unauthorized: http.StatusUnauthorized,
		created:      http.StatusCreated,
		decode: func(b []byte) (received, int) {
			var s struct {
				State       string `json:"state"`
				Ref         string `json:"ref"`
				Name        string `json:"name"`
				Context     string `json:"context"`
				TargetURL   string `json:"target_url"`
				Description string `json:"description"`
				Coverage    any    `json:"coverage"`
				PipelineID  int    `json:"pipeline_id"`
			}
			if strictJSON(b, &s) != nil || !stateIn(s.State, "pending", "running", "success", "failed", "canceled", "skipped") {
				return received{}, http.StatusBadRequest
			}
			return received{State: s.State, Context: s.Name, Description: s.Description}, 0
		},
	},
	{
		typ:     notificationv1.GiteaProvider,
		address: func(base string) string { return base + "/git/owner/repo" },
		token:   testToken,
		path:    regexp.MustCompile(`^/git/api/v1/repos/owner/repo/statuses/([0-9a-f]{40})$`),
		list:    regexp.MustCompile(`^/git/api/v1/repos/owner/repo/commits/([0-9a-f]{40})/status$`),
		listed: func(statuses []received) any {
			type status struct {
				ID          int    `json:"id"`
				Status      string `json:"status"`
				Description string `json:"description"`
				Context     string `json:"context"`
			}
			out := []status{}
			for i, st := range latestPerContext(statuses) {
				out = append(out, status{ID: i + 1, Status: st.State, Description: st.Description, Context: st.Context})
			}
			return map[string]any{"state": "pending", "sha": testSHA, "total_count": len(out), "statuses": out}
		},
		authorized: func(r *http.Request) bool {
			return r.Header.Get("Authorization") == "token "+testToken
		},
		unauthorized: http.StatusUnauthorized,
		created:      http.StatusCreated,
		decode: func(b []byte) (received, int) {
			var s struct {
				State       string `json:"state"`
				TargetURL   string `json:"target_url"`
				Description string `json:"description"`
				Context     string `json:"context"`
			}
			if strictJSON(b, &s) != nil || !stateIn(s.State, "pending", "success", "error", "failure", "warning") {
				return received{}, http.StatusUnprocessableEntity
			}
			return received{State: s.State, Context: s.Context, Description: s.Description}, 0
		},
	},
	{
		typ:          notificationv1.BitbucketProvider,
		address:      func(base string) string { return base + "/workspace/repo" },
		token:        "bot:app-password",
		path:         regexp.MustCompile(`^/2.0/repositories/workspace/repo/commit/([0-9a-f]{40})/statuses/build$`),
		authorized:   hasAuth(basicHeader("bot", "app-password")),
		unauthorized: http.StatusUnauthorized,
		created:      http.StatusCreated,
		decode: func(b []byte) (received, int) {
			var s struct {
				Type        string `json:"type"`
				Key         string `json:"key"`
				State       string `json:"state"`
				URL         string `json:"url"`
				Name        string `json:"name"`
				Description string `json:"description"`
				Refname     string `json:"refname"`
			}
			if strictJSON(b, &s) != nil || s.Key == "" || len(s.Key) > 40 || s.URL == "" ||
				!stateIn(s.State, "INPROGRESS", "SUCCESSFUL", "FAILED", "STOPPED") {
				return received{}, http.StatusBadRequest
			}
			return received{State: s.State, Context: s.Name, Description: s.Description, Extra: map[string]string{"key": s.Key, "url": s.URL}}, 0
		},
	},
	{
		typ:     notificationv1.BitbucketServerProvider,
		address: func(base string) string { return base + "/bitbucket/scm/PROJ/repo.git" },
		token:   testToken,
		path:    regexp.MustCompile(`^/bitbucket/rest/api/latest/projects/PROJ/repos/repo/commits/([0-9a-f]{40})/builds$`),
		// An HTTP access token, or a user's name and password.
		authorized: func(r *http.Request) bool {
			return hasAuth("Bearer "+testToken)(r) || hasAuth(basicHeader("ci-bot", "pa55word"))(r)
		},
		unauthorized: http.StatusUnauthorized,
		created:      http.StatusNoContent,
		decode: func(b []byte) (received, int) {
			var s struct {
				Key         string `json:"key"`
				State       string `json:"state"`
				URL         string `json:"url"`
				Name        string `json:"name"`
				Description string `json:"description"`
				BuildNumber string `json:"buildNumber"`
				Parent      string `json:"parent"`
				Ref         string `json:"ref"`
				Duration    int64  `json:"duration"`
			}
			if strictJSON(b, &s) != nil || s.Key == "" || len(s.Key) > 255 || len(s.Name) > 255 || s.URL == "" ||
				!stateIn(s.State, "INPROGRESS", "SUCCESSFUL", "FAILED", "CANCELLED", "UNKNOWN") {
				return received{}, http.StatusBadRequest
			}
			return received{State: s.State, Context: s.Name, Description: s.Description, Extra: map[string]string{"key": s.Key, "url": s.URL}}, 0
		},
	},
	{
		typ:     notificationv1.AzureDevOpsProvider,
		address: func(base string) string { return base + "/org/project/_git/repo" },
		token:   testToken,
		path:    regexp.MustCompile(`^/org/project/_apis/git/repositories/repo/commits/([0-9a-f]{40})/statuses$`),
		list:    regexp.MustCompile(`^/org/project/_apis/git/repositories/repo/commits/([0-9a-f]{40})/statuses$`),
		listed: func(statuses []received) any {
			type status struct {
				ID          int    `json:"id"`
				State       string `json:"state"`
				Description string `json:"description"`
				Context     struct {
					Name  string `json:"name"`
					Genre string `json:"genre"`
				} `json:"context"`
			}
			out := []status{}
			for i, st := range latestPerContext(statuses) {
				v := status{ID: i + 1, State: st.State, Description: st.Description}
				v.Context.Name, v.Context.Genre = st.Context, st.Extra["genre"]
				out = append(out, v)
			}
			return map[string]any{"count": len(out), "value": out}
		},
		authorized: hasAuth(basicHeader("", testToken)),
		// A bad PAT gets a sign-in page.
		unauthorized: http.StatusNonAuthoritativeInfo,
		created:      http.StatusCreated,
		decode: func(b []byte) (received, int) {
			var s struct {
				State       string `json:"state"`
				Description string `json:"description"`
				TargetURL   string `json:"targetUrl"`
				Context     struct {
					Name  string `json:"name"`
					Genre string `json:"genre"`
				} `json:"context"`
			}
			if strictJSON(b, &s) != nil || s.Context.Name == "" ||
				!stateIn(s.State, "notSet", "pending", "succeeded", "failed", "error", "notApplicable") {
				return received{}, http.StatusBadRequest
			}
			return received{State: s.State, Context: s.Context.Name, Description: s.Description, Extra: map[string]string{"genre": s.Context.Genre}}, 0
		},
	},
}

func contractOf(typ string) hostContract {
	for _, c := range contracts {
		if c.typ == typ {
			return c
		}
	}
	panic("no contract for " + typ)
}

// hostStandIn serves one host's status API (a standIn's handler) and
// keeps the statuses it accepted.
type hostStandIn struct {
	*standIn
	contract hostContract

	mu       sync.Mutex
	statuses []received
}

func newHostStandIn(t *testing.T, typ string) (*hostStandIn, *httptest.Server) {
	s := &hostStandIn{contract: contractOf(typ)}
	s.standIn = newStandIn(t, s.serve)
	return s, s.Server
}

func (s *hostStandIn) serve(w http.ResponseWriter, r *http.Request, body []byte) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.contract.authorized(r) {
		if s.contract.unauthorized == http.StatusNonAuthoritativeInfo {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNonAuthoritativeInfo)
			_, _ = io.WriteString(w, "<html>Sign in</html>")
			return nil
		}
		http.Error(w, `{"message":"Bad credentials"}`, s.contract.unauthorized)
		return nil
	}
	if s.contract.typ == notificationv1.AzureDevOpsProvider && r.URL.Query().Get("api-version") == "" {
		http.Error(w, `{"message":"no api-version"}`, http.StatusBadRequest)
		return nil
	}
	if r.Method == http.MethodGet {
		s.list(w, r)
		return nil
	}
	m := s.contract.path.FindStringSubmatch(r.URL.EscapedPath())
	if r.Method != http.MethodPost || m == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return nil
	}
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"message":"unsupported media type"}`, http.StatusUnsupportedMediaType)
		return nil
	}
	st, code := s.contract.decode(body)
	if code != 0 {
		http.Error(w, `{"message":"Validation Failed"}`, code)
		return nil
	}
	st.SHA = m[1]
	if s.contract.typ == notificationv1.GitLabProvider && s.gitlabSameState(st) {
		// GitLab refuses to move a status to the state it is in.
		http.Error(w, `{"message":"Cannot transition status via :run from :running"}`, http.StatusBadRequest)
		return nil
	}
	s.statuses = append(s.statuses, st)
	w.WriteHeader(s.contract.created)
	if s.contract.created != http.StatusNoContent {
		_, _ = io.WriteString(w, `{"id":1}`)
	}
	return st
}

// list answers a GET of the commit's statuses as the host does; GitLab's
// is filtered by ?name=.
func (s *hostStandIn) list(w http.ResponseWriter, r *http.Request) {
	var m []string
	if s.contract.list != nil {
		m = s.contract.list.FindStringSubmatch(r.URL.EscapedPath())
	}
	if m == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	var of []received
	for _, st := range s.statuses {
		if st.SHA == m[1] && (r.URL.Query().Get("name") == "" || r.URL.Query().Get("name") == st.Context) {
			of = append(of, st)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.contract.listed(of))
}

func (s *hostStandIn) gitlabSameState(st received) bool {
	for i := len(s.statuses) - 1; i >= 0; i-- {
		if s.statuses[i].SHA == st.SHA && s.statuses[i].Context == st.Context {
			return s.statuses[i].State == st.State
		}
	}
	return false
}

func (s *hostStandIn) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.statuses...)
}

func (s *hostStandIn) posts() int {
	n := 0
	for _, r := range s.requests() {
		if r.Method == http.MethodPost {
			n++
		}
	}
	return n
}

// configFor is a Provider configuration of the contract's type on srv.
func configFor(c hostContract, srv *httptest.Server) Config {
	return Config{Type: c.typ, Address: c.address(srv.URL), Token: c.token, ProviderUID: "0c9e5f1d-2b7a-4c61-9d7e-0a1b2c3d4e5f", Client: srv.Client()}
}

func (r received) String() string { return fmt.Sprintf("%s %s %q", r.State, r.Context, r.Description) }
