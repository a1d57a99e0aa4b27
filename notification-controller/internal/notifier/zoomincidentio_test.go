package notifier

import (
	"maps"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

// --- incident.io: POST /v2/alert_events/http/{alert_source_config_id},
// a bearer token, an alert event; 202 with the deduplication key.

type ioEvent struct {
	Title            string            `json:"title"`
	Status           string            `json:"status"`
	DeduplicationKey string            `json:"deduplication_key"`
	Description      string            `json:"description"`
	SourceURL        string            `json:"source_url"`
	Metadata         map[string]string `json:"metadata"`
}

// incidentioService keeps the alerts by deduplication key: true while
// firing.
type incidentioService struct {
	mu     sync.Mutex
	firing map[string]bool
}

func (s *incidentioService) serve(r *http.Request, body []byte) (int, any, any) {
	if err := isPost(r, "/v2/alert_events/http/01HSOURCE", "application/json"); err != nil {
		return http.StatusNotFound, map[string]string{"type": "not_found"}, nil
	}
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		return http.StatusUnauthorized, map[string]string{"type": "authentication_error"}, nil
	}
	var ev ioEvent
	if err := strictJSON(body, &ev); err != nil || ev.Title == "" || ev.DeduplicationKey == "" ||
		(ev.Status != "firing" && ev.Status != "resolved") {
		return http.StatusUnprocessableEntity, map[string]string{"type": "validation_error"}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firing == nil {
		s.firing = map[string]bool{}
	}
	s.firing[ev.DeduplicationKey] = ev.Status == "firing"
	return http.StatusAccepted, map[string]string{"status": "success", "message": "Event accepted for processing", "deduplication_key": ev.DeduplicationKey}, ev
}

func (s *incidentioService) alerts() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.firing)
}

// TestIncidentioFiresAndResolvesByUID: an object's failure fires an
// alert keyed by its UID, progress sends nothing, its recovery resolves
// that alert; an object without a UID is keyed by kind, namespace and
// name; a wrong token is a 401 not retried.
func TestIncidentioFiresAndResolvesByUID(t *testing.T) {
	g := NewWithT(t)
	io := &incidentioService{}
	s := newStandIn(t, service(io.serve).handle)
	cfg := Config{Type: notificationv1.IncidentioProvider, Address: s.URL + "/v2/alert_events/http/01HSOURCE", Token: testToken}

	failed := testEvent()
	failed.InvolvedObject.UID = "6f1c2d3e-uid"
	g.Expect(post(t, cfg, failed)).To(Succeed())
	fired := s.got()[0].(ioEvent)
	g.Expect(fired.Title).To(Equal("kustomization/apps/web: DriftDetected"))
	g.Expect(fired.Description).To(Equal("1 object drifted from Git"))
	g.Expect(fired.Metadata).To(HaveKeyWithValue("severity", "error"))
	g.Expect(fired.Metadata).To(HaveKeyWithValue("cluster", "eu-1"))
	g.Expect(fired.Metadata).To(HaveKeyWithValue("Revision", "main@sha1:4f3c2b1a"))
	g.Expect(fired.Metadata).To(HaveKeyWithValue("reportingController", "sync-controller"))

	progress := progressEvent()
	progress.InvolvedObject.UID = failed.InvolvedObject.UID
	g.Expect(post(t, cfg, progress)).To(Succeed())
	g.Expect(s.count()).To(Equal(1), "progress is not sent")
	recovered := recoveredEvent()
	recovered.InvolvedObject.UID = failed.InvolvedObject.UID
	g.Expect(post(t, cfg, recovered)).To(Succeed())
	g.Expect(post(t, cfg, testEvent())).To(Succeed())
	g.Expect(io.alerts()).To(Equal(map[string]bool{"6f1c2d3e-uid": false, "plumb:kustomization:apps:web": true}))

	cfg.Token = "wrong"
	expectPostFails(t, cfg, "the incident.io endpoint answered 401 Unauthorized", true)
}

// --- Zoom Team Chat Incoming Webhook: POST the connection's endpoint
// with ?format=full, Authorization the verification token as it is, a
// rich message.

type zmMessage struct {
	Content struct {
		Head struct {
			Text    string `json:"text"`
			SubHead *struct {
				Text string `json:"text"`
			} `json:"sub_head"`
		} `json:"head"`
		Body []struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Items []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"items"`
		} `json:"body"`
	} `json:"content"`
}

func zoomService(r *http.Request, body []byte) (int, any, any) {
	if err := isPost(r, "/inbound/webhook/v1/AbCdEf", "application/json"); err != nil {
		return http.StatusNotFound, map[string]any{"code": 404}, nil
	}
	if r.Header.Get("Authorization") != testToken {
		return http.StatusUnauthorized, map[string]any{"code": 401, "message": "Invalid authorization token."}, nil
	}
	var msg zmMessage
	format := r.URL.Query().Get("format")
	if format != "full" && format != "message" {
		return http.StatusBadRequest, map[string]any{"code": 400}, nil
	}
	if err := strictJSON(body, &msg); err != nil || msg.Content.Head.Text == "" || len(msg.Content.Body) == 0 {
		return http.StatusBadRequest, map[string]any{"code": 400, "message": "Invalid message."}, nil
	}
	for _, item := range msg.Content.Body {
		if item.Type != "message" && item.Type != "fields" {
			return http.StatusBadRequest, map[string]any{"code": 400}, nil
		}
	}
	return http.StatusOK, map[string]any{}, msg
}

// TestZoomRichMessage: the object heads the message, the severity is its
// sub head, the message and the facts follow; ?format=full is added
// unless the address names a format; the token goes unprefixed.
func TestZoomRichMessage(t *testing.T) {
	g := NewWithT(t)
	s := newStandIn(t, service(zoomService).handle)
	cfg := Config{Type: notificationv1.ZoomProvider, Address: s.URL + "/inbound/webhook/v1/AbCdEf", Token: testToken}
	g.Expect(post(t, cfg, testEvent())).To(Succeed())
	msg := s.got()[0].(zmMessage)
	g.Expect(msg.Content.Head.Text).To(Equal("kustomization/apps/web"))
	g.Expect(msg.Content.Head.SubHead.Text).To(Equal("error"))
	g.Expect(msg.Content.Body[0].Type).To(Equal("message"))
	g.Expect(msg.Content.Body[0].Text).To(Equal("1 object drifted from Git"))
	g.Expect(msg.Content.Body[1].Type).To(Equal("fields"))
	keys := []string{}
	for _, f := range msg.Content.Body[1].Items {
		keys = append(keys, f.Key)
	}
	g.Expect(keys).To(Equal([]string{"Revision", "Summary", "Drift", "cluster"}))
	g.Expect(s.requests()[0].URL.RawQuery).To(Equal("format=full"))

	cfg.Address += "?format=message"
	g.Expect(post(t, cfg, testEvent())).To(Succeed())
	g.Expect(s.requests()[1].URL.RawQuery).To(Equal("format=message"))

	cfg.Token = "Bearer " + testToken
	expectPostFails(t, cfg, "the zoom endpoint answered 401 Unauthorized", true)
}
