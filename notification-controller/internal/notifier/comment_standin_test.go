package notifier

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	notificationv1 "plumb.dev/api/notification/v1"
)

// The stand-ins of the hosts' change request comments: each checks a
// request as its host does (method, path, the credentials of the host's
// commit statuses, a body decoded strictly with the host's field names)
// and keeps the comments of each change request, answering lists in the
// host's shape and order and refusing to edit another user's comment.

// botLogin is the token's user on every stand-in.
const botLogin = "plumb-bot"

// commentContract is what one host requires of comment requests.
type commentContract struct {
	typ string
	// address is the repository URL on the stand-in at base.
	address func(base string) string
	// authorized checks the credentials as the host does.
	authorized func(r *http.Request) bool
	// user is the path of "the authenticated user", answered by
	// userJSON.
	user     string
	userJSON func(login string) any
	// comments matches the path of a change request's comments
	// (capturing its number): GET lists them, POST adds one.
	comments *regexp.Regexp
	// comment matches the path of one comment (capturing its id), edited
	// with editMethod.
	comment    *regexp.Regexp
	editMethod string
	// listed renders one listed comment in the host's shape.
	listed func(c storedComment) any
	// newestFirst is the host's default order of a list, and ascending
	// the query that asks for the oldest first.
	newestFirst bool
	ascending   map[string]string
}

var commentContracts = []commentContract{
	{
		typ:        notificationv1.GitHubPullRequestCommentProvider,
		address:    func(base string) string { return base + "/org/repo" },
		authorized: hasAuth("Bearer " + testToken),
		user:       "/api/v3/user",
		userJSON:   func(login string) any { return map[string]any{"login": login, "id": 1, "type": "User"} },
		comments:   regexp.MustCompile(`^/api/v3/repos/org/repo/issues/([0-9]+)/comments$`),
		comment:    regexp.MustCompile(`^/api/v3/repos/org/repo/issues/comments/([0-9]+)$`),
		editMethod: http.MethodPatch,
		listed: func(c storedComment) any {
			return map[string]any{"id": c.id, "body": c.body, "user": map[string]any{"login": c.author, "type": "User"}, "author_association": "MEMBER"}
		},
	},
	{
		typ:        notificationv1.GitLabMergeRequestCommentProvider,
		address:    func(base string) string { return base + "/group/sub/project" },
		authorized: func(r *http.Request) bool { return r.Header.Get("PRIVATE-TOKEN") == testToken },
		user:       "/api/v4/user",
		userJSON:   func(login string) any { return map[string]any{"username": login, "id": 1, "state": "active"} },
		comments:   regexp.MustCompile(`^/api/v4/projects/group%2Fsub%2Fproject/merge_requests/([0-9]+)/notes$`),
		comment:    regexp.MustCompile(`^/api/v4/projects/group%2Fsub%2Fproject/merge_requests/[0-9]+/notes/([0-9]+)$`),
		editMethod: http.MethodPut,
		listed: func(c storedComment) any {
			return map[string]any{"id": c.id, "body": c.body, "author": map[string]any{"username": c.author}, "system": false, "noteable_type": "MergeRequest"}
		},
		// GitLab lists notes newest first unless sorted ascending.
		newestFirst: true,
		ascending:   map[string]string{"sort": "asc"},
	},
	{
		typ:        notificationv1.GiteaPullRequestCommentProvider,
		address:    func(base string) string { return base + "/git/owner/repo" },
		authorized: func(r *http.Request) bool { return r.Header.Get("Authorization") == "token "+testToken },
		user:       "/git/api/v1/user",
		userJSON:   func(login string) any { return map[string]any{"login": login, "id": 1, "username": login} },
		comments:   regexp.MustCompile(`^/git/api/v1/repos/owner/repo/issues/([0-9]+)/comments$`),
		comment:    regexp.MustCompile(`^/git/api/v1/repos/owner/repo/issues/comments/([0-9]+)$`),
		editMethod: http.MethodPatch,
		listed: func(c storedComment) any {
			return map[string]any{"id": c.id, "body": c.body, "user": map[string]any{"login": c.author, "username": c.author}}
		},
	},
}

func commentContractOf(typ string) commentContract {
	for _, c := range commentContracts {
		if c.typ == typ {
			return c
		}
	}
	panic("no comment contract for " + typ)
}

// storedComment is a comment a stand-in keeps.
type storedComment struct {
	id      int64
	number  string
	author  string
	body    string
	updated int
}

// commentStandIn serves one host's comments (a standIn's handler).
type commentStandIn struct {
	*standIn
	contract commentContract
	// bot is the login of the credentials' user: botLogin, or a GitHub
	// App's bot; app, when set, serves the App's own endpoints (/app...),
	// which authenticate with the App's JWT rather than a token.
	bot string
	app http.HandlerFunc

	mu       sync.Mutex
	comments []storedComment
	nextID   int64
}

func newCommentStandIn(t *testing.T, typ string) *commentStandIn {
	s := &commentStandIn{contract: commentContractOf(typ), nextID: 1000, bot: botLogin}
	s.standIn = newStandIn(t, s.serve)
	return s
}

// seed adds a comment by author to change request number.
func (s *commentStandIn) seed(number, author, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.comments = append(s.comments, storedComment{id: s.nextID, number: number, author: author, body: body})
}

// of returns the comments of change request number, oldest first.
func (s *commentStandIn) of(number string) []storedComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storedComment
	for _, c := range s.comments {
		if c.number == number {
			out = append(out, c)
		}
	}
	return out
}

func (s *commentStandIn) serve(w http.ResponseWriter, r *http.Request, body []byte) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contract
	if s.app != nil && strings.HasPrefix(r.URL.Path, "/api/v3/app") {
		s.app(w, r)
		return nil
	}
	if !c.authorized(r) {
		reply(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return nil
	}
	path := r.URL.EscapedPath()
	if r.Method == http.MethodGet && path == c.user {
		reply(w, http.StatusOK, c.userJSON(s.bot))
		return nil
	}
	if m := c.comments.FindStringSubmatch(path); m != nil {
		switch r.Method {
		case http.MethodGet:
			return s.list(w, r, m[1])
		case http.MethodPost:
			text, ok := commentText(w, r, body)
			if !ok {
				return nil
			}
			s.nextID++
			stored := storedComment{id: s.nextID, number: m[1], author: s.bot, body: text}
			s.comments = append(s.comments, stored)
			reply(w, http.StatusCreated, c.listed(stored))
			return stored
		}
	}
	if m := c.comment.FindStringSubmatch(path); m != nil && r.Method == c.editMethod {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		for i := range s.comments {
			if s.comments[i].id != id {
				continue
			}
			if s.comments[i].author != s.bot {
				reply(w, http.StatusForbidden, map[string]string{"message": "Must have admin rights to Repository."})
				return nil
			}
			text, ok := commentText(w, r, body)
			if !ok {
				return nil
			}
			s.comments[i].body = text
			s.comments[i].updated++
			reply(w, http.StatusOK, c.listed(s.comments[i]))
			return s.comments[i]
		}
	}
	reply(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	return nil
}

// list answers a change request's comments in the host's order: GitLab
// newest first unless asked otherwise.
func (s *commentStandIn) list(w http.ResponseWriter, r *http.Request, number string) any {
	ascending := !s.contract.newestFirst
	for k, v := range s.contract.ascending {
		ascending = ascending || r.URL.Query().Get(k) == v
	}
	if pp := r.URL.Query().Get("per_page"); pp != "" {
		if n, err := strconv.Atoi(pp); err != nil || n > 100 {
			reply(w, http.StatusUnprocessableEntity, map[string]string{"message": "per_page is at most 100"})
			return nil
		}
	}
	out := []any{}
	for _, c := range s.comments {
		if c.number == number {
			out = append(out, s.contract.listed(c))
		}
	}
	if !ascending {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	return nil
}

// commentText reads a create or edit body as the hosts do: JSON with one
// non-empty "body".
func commentText(w http.ResponseWriter, r *http.Request, body []byte) (string, bool) {
	if r.Header.Get("Content-Type") != "application/json" {
		reply(w, http.StatusUnsupportedMediaType, map[string]string{"message": "unsupported media type"})
		return "", false
	}
	var b struct {
		Body string `json:"body"`
	}
	if strictJSON(body, &b) != nil || b.Body == "" {
		reply(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return "", false
	}
	return b.Body, true
}

// commentConfig is a Provider configuration of the contract's type on srv.
func commentConfig(c commentContract, srv *httptest.Server) Config {
	return Config{Type: c.typ, Address: c.address(srv.URL), Token: testToken, ProviderUID: "0c9e5f1d-2b7a-4c61-9d7e-0a1b2c3d4e5f", Client: srv.Client()}
}
