package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"plumb.dev/pkg/events"
)

// githubdispatch sends every event, of any kind, as a repository_dispatch
// event, so a GitHub Actions workflow can act on it (on:
// repository_dispatch, types: [Kustomization/web.apps]).
func newGitHubDispatch(cfg Config) (Notifier, error) {
	g, err := newGitHubRepo(cfg)
	if err != nil {
		return nil, err
	}
	return &githubDispatch{g}, nil
}

type githubDispatch struct{ githubRepo }

// githubDispatchBody is the body of "create a repository dispatch event".
type githubDispatchBody struct {
	EventType     string          `json:"event_type"`
	ClientPayload dispatchPayload `json:"client_payload"`
}

// dispatchPayload is the event as a workflow reads it (github.event.
// client_payload). GitHub takes at most 10 top-level properties, so this
// is the event without its schema version and reporting instance.
type dispatchPayload struct {
	ID                  string                 `json:"id"`
	InvolvedObject      events.ObjectReference `json:"involvedObject"`
	Severity            events.Severity        `json:"severity"`
	Reason              string                 `json:"reason"`
	Message             string                 `json:"message"`
	Revision            string                 `json:"revision,omitempty"`
	Metadata            map[string]string      `json:"metadata,omitempty"`
	Changes             []events.Change        `json:"changes,omitempty"`
	Timestamp           time.Time              `json:"timestamp"`
	ReportingController string                 `json:"reportingController"`
}

const (
	// maxEventType is GitHub's limit on event_type.
	maxEventType = 100
	// maxDispatchPayload bounds client_payload well below GitHub's limit
	// on a webhook's payload.
	maxDispatchPayload = 32 << 10
	// maxDispatchMessage is how much of a long message is kept when the
	// payload is too large.
	maxDispatchMessage = 4096
)

func (g *githubDispatch) Post(ctx context.Context, e events.Event) error {
	e = withoutUserInfo(e)
	o := e.InvolvedObject
	return call(ctx, g.cfg, hostCall{
		method: http.MethodPost,
		url:    g.api + "/dispatches",
		auth:   g.auth(),
		body: githubDispatchBody{
			// Flux's form: <Kind>/<name>.<namespace>.
			EventType:     clipRunes(fmt.Sprintf("%s/%s.%s", o.Kind, o.Name, o.Namespace), maxEventType),
			ClientPayload: boundedPayload(e),
		},
	})
}

// boundedPayload is e as a dispatchPayload of at most maxDispatchPayload
// bytes: what goes first when it is larger is the drift list, then the
// message's tail, then the metadata (each said in the metadata that
// remains, or the message).
func boundedPayload(e events.Event) dispatchPayload {
	p := dispatchPayload{
		ID: e.ID, InvolvedObject: e.InvolvedObject, Severity: e.Severity, Reason: e.Reason, Message: e.Message,
		Revision: e.Revision, Metadata: e.Metadata, Changes: e.Changes, Timestamp: e.Timestamp,
		ReportingController: e.ReportingController,
	}
	fits := func() bool {
		b, err := json.Marshal(p)
		return err == nil && len(b) <= maxDispatchPayload
	}
	if fits() {
		return p
	}
	if n := len(p.Changes); n > 0 {
		p.Changes = nil
		p.Message += fmt.Sprintf(" (%d drifted fields not listed: the payload would be too large)", n)
	}
	if !fits() {
		p.Message = clipRunes(p.Message, maxDispatchMessage)
	}
	if !fits() {
		p.Metadata = nil
	}
	if !fits() {
		// Only the object's own names are left that can be large.
		p.Message = clipRunes(p.Message, 256)
	}
	return p
}
