package notifier

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Azure DevOps' commit statuses: POST
// {organization}/{project}/_apis/git/repositories/{repo}/commits/{sha}/statuses?api-version=7.1,
// HTTP Basic authentication with an empty user name and a personal access
// token (Code: Status scope) as the password.

const (
	azureDevOpsForm = "https://dev.azure.com/<organization>/<project>/_git/<repo>"
	// azureDevOpsAPIVersion is the REST API version every call names.
	azureDevOpsAPIVersion = "7.1"
	// azureDevOpsGenre is the first part of the status context Azure
	// DevOps shows ("plumb/kustomization/apps/web/…").
	azureDevOpsGenre = "plumb"
)

func newAzureDevOps(cfg Config) (Notifier, error) {
	repo, err := parseRepository(cfg, azureDevOpsForm)
	if err != nil {
		return nil, err
	}
	// .../<project>/_git/<repo>, after the organization (dev.azure.com),
	// nothing (<organization>.visualstudio.com) or the collection
	// (Azure DevOps Server).
	n := len(repo.segments)
	if n < 3 || repo.segments[n-2] != "_git" {
		return nil, errWrongForm(cfg.Type, azureDevOpsForm)
	}
	if cfg.Token == "" {
		return nil, needToken(cfg.Type, azureDevOpsToken)
	}
	escaped := make([]string, n-2)
	for i, s := range repo.segments[:n-2] {
		escaped[i] = url.PathEscape(s)
	}
	commits := repo.api("/" + strings.Join(escaped, "/") + "/_apis/git/repositories/" + url.PathEscape(repo.segments[n-1]) + "/commits/")
	return &commitStatusNotifier{cfg: cfg, host: &azureDevOps{cfg: cfg, commits: commits}}, nil
}

type azureDevOps struct {
	cfg     Config
	commits string
}

// azureDevOpsStatus is the body of "create a commit status" (GitStatus).
type azureDevOpsStatus struct {
	State       string                   `json:"state"`
	Description string                   `json:"description,omitempty"`
	Context     azureDevOpsStatusContext `json:"context"`
}

type azureDevOpsStatusContext struct {
	Name  string `json:"name"`
	Genre string `json:"genre"`
}

// A failure is "error", as Flux posts it; branch policies treat it as
// failed.
var azureDevOpsStates = map[statusState]string{stateSuccess: "succeeded", stateFailure: "error", statePending: "pending"}

func (a *azureDevOps) status(st commitStatus) azureDevOpsStatus {
	return azureDevOpsStatus{
		State:       azureDevOpsStates[st.state],
		Description: clipRunes(st.description, maxStatusDescription),
		Context:     azureDevOpsStatusContext{Name: st.context, Genre: azureDevOpsGenre},
	}
}

func (a *azureDevOps) auth() http.Header { return basicAuth("", a.cfg.Token) }

func (a *azureDevOps) post(ctx context.Context, st commitStatus) error {
	return call(ctx, a.cfg, hostCall{
		method: http.MethodPost,
		url:    a.commits + st.sha + "/statuses?api-version=" + azureDevOpsAPIVersion,
		auth:   a.auth(),
		body:   a.status(st),
	})
}

// shows reads the latest status of each context (GET
// .../statuses?latestOnly=true).
func (a *azureDevOps) shows(ctx context.Context, st commitStatus) bool {
	var latest struct {
		Value []azureDevOpsStatus `json:"value"`
	}
	err := call(ctx, a.cfg, hostCall{
		method: http.MethodGet,
		url:    a.commits + st.sha + "/statuses?latestOnly=true&api-version=" + azureDevOpsAPIVersion,
		auth:   a.auth(),
		into:   &latest,
	})
	if err != nil {
		return false
	}
	var list []shownStatus
	for _, s := range latest.Value {
		if s.Context.Genre == azureDevOpsGenre {
			list = append(list, shownStatus{s.Context.Name, s.State, s.Description})
		}
	}
	want := a.status(st)
	return latestIs(list, shownStatus{want.Context.Name, want.State, want.Description})
}
