package notifier

// Stand-ins for the paging and incident services: each checks a request
// as its service does (method, path, authentication, the JSON fields it
// knows, required fields, enums, lengths) and answers as it answers. The
// request types here are the test's own reading of each service's
// published API, independent of the notifier's.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	testRoutingKey = "R0UT1NGkey0123456789abcdefABCDEF"
	testSentryKey  = "0123456789abcdef0123456789abcdef"
)

func chars(s string) int { return utf8.RuneCountInString(s) }

func isPost(r *http.Request, path, contentType string) error {
	switch {
	case r.Method != http.MethodPost:
		return fmt.Errorf("method %s", r.Method)
	case r.URL.Path != path:
		return fmt.Errorf("path %s", r.URL.Path)
	case r.Header.Get("Content-Type") != contentType:
		return fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	return nil
}

// --- Alertmanager: POST /api/v2/alerts, a JSON array of postableAlert.

type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
}

var promLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// alertmanagerService answers as Alertmanager behind an authenticating
// proxy: auth is what the proxy wants (an Authorization header value).
func alertmanagerService(auth string) service {
	return func(r *http.Request, body []byte) (int, any, any) {
		if err := isPost(r, "/api/v2/alerts", "application/json"); err != nil {
			return http.StatusNotFound, err.Error(), nil
		}
		if r.Header.Get("Authorization") != auth {
			return http.StatusUnauthorized, "unauthorized", nil
		}
		var alerts []amAlert
		if err := strictJSON(body, &alerts); err != nil {
			return http.StatusBadRequest, err.Error(), nil
		}
		for _, a := range alerts {
			if len(a.Labels) == 0 {
				return http.StatusBadRequest, "at least one label pair required", nil
			}
			for _, m := range []map[string]string{a.Labels, a.Annotations} {
				for k, v := range m {
					if !promLabelName.MatchString(k) || !utf8.ValidString(v) {
						return http.StatusBadRequest, "invalid label set: " + k, nil
					}
				}
			}
			if a.StartsAt != "" {
				if _, err := time.Parse(time.RFC3339, a.StartsAt); err != nil {
					return http.StatusBadRequest, "startsAt: " + err.Error(), nil
				}
			}
		}
		return http.StatusOK, "", alerts
	}
}

// --- PagerDuty Events API v2: POST /v2/enqueue.

type pdEvent struct {
	RoutingKey  string     `json:"routing_key"`
	EventAction string     `json:"event_action"`
	DedupKey    string     `json:"dedup_key"`
	Payload     *pdPayload `json:"payload"`
	Images      []any      `json:"images"`
	Links       []any      `json:"links"`
	Client      string     `json:"client"`
	ClientURL   string     `json:"client_url"`
}

type pdPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp"`
	Component     string         `json:"component"`
	Group         string         `json:"group"`
	Class         string         `json:"class"`
	CustomDetails map[string]any `json:"custom_details"`
}

// pagerDutyService keeps the incidents it opened, by dedup_key: true
// while open.
type pagerDutyService struct {
	mu        sync.Mutex
	incidents map[string]bool
}

func (p *pagerDutyService) open() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]bool{}
	for k, v := range p.incidents {
		out[k] = v
	}
	return out
}

func (p *pagerDutyService) serve(r *http.Request, body []byte) (int, any, any) {
	invalid := func(why string) (int, any, any) {
		return http.StatusBadRequest, map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": []string{why}}, nil
	}
	if err := isPost(r, "/v2/enqueue", "application/json"); err != nil {
		return http.StatusNotFound, err.Error(), nil
	}
	var ev pdEvent
	if err := strictJSON(body, &ev); err != nil {
		return invalid(err.Error())
	}
	if ev.RoutingKey != testRoutingKey {
		return invalid("'routing_key' is invalid")
	}
	if len(ev.DedupKey) > 255 {
		return invalid("'dedup_key' is too long")
	}
	switch ev.EventAction {
	case "trigger":
		pl := ev.Payload
		switch {
		case pl == nil:
			return invalid("'payload' is missing")
		case pl.Summary == "" || chars(pl.Summary) > 1024:
			return invalid("'payload.summary' is missing or longer than 1024")
		case pl.Source == "":
			return invalid("'payload.source' is missing")
		case !map[string]bool{"critical": true, "error": true, "warning": true, "info": true}[pl.Severity]:
			return invalid("'payload.severity' is invalid")
		}
		if pl.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, pl.Timestamp); err != nil {
				return invalid("'payload.timestamp' is invalid")
			}
		}
	case "acknowledge", "resolve":
		if ev.DedupKey == "" {
			return invalid("'dedup_key' is missing")
		}
	default:
		return invalid("'event_action' is invalid")
	}
	p.mu.Lock()
	if p.incidents == nil {
		p.incidents = map[string]bool{}
	}
	if ev.EventAction == "trigger" {
		p.incidents[ev.DedupKey] = true
	} else if _, ok := p.incidents[ev.DedupKey]; ok {
		p.incidents[ev.DedupKey] = false
	}
	p.mu.Unlock()
	return http.StatusAccepted, map[string]string{"status": "success", "message": "Event processed", "dedup_key": ev.DedupKey}, ev
}

// --- Opsgenie Alert API: POST /v2/alerts, POST /v2/alerts/{id}/close.

type ogAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Responders  []any             `json:"responders"`
	VisibleTo   []any             `json:"visibleTo"`
	Actions     []string          `json:"actions"`
	Tags        []string          `json:"tags"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	User        string            `json:"user"`
	Note        string            `json:"note"`
}

type ogClose struct {
	User   string `json:"user"`
	Source string `json:"source"`
	Note   string `json:"note"`
}

// ogClosed is what the stand-in accepted for a close.
type ogClosed struct {
	Alias string
	Body  ogClose
}

func opsgenieService(r *http.Request, body []byte) (int, any, any) {
	unprocessable := func(why string) (int, any, any) {
		return http.StatusUnprocessableEntity, map[string]any{"message": why, "took": 0.001, "requestId": "r"}, nil
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		return http.StatusMethodNotAllowed, "", nil
	}
	if r.Header.Get("Authorization") != "GenieKey "+testToken {
		return http.StatusUnauthorized, map[string]any{"message": "Could not authenticate", "took": 0.0, "requestId": "r"}, nil
	}
	accepted := map[string]any{"result": "Request will be processed", "took": 0.002, "requestId": "r"}
	if alias, ok := strings.CutPrefix(r.URL.Path, "/v2/alerts/"); ok {
		alias, ok = strings.CutSuffix(alias, "/close")
		if !ok || alias == "" {
			return http.StatusNotFound, "", nil
		}
		if t := r.URL.Query().Get("identifierType"); t != "alias" && t != "id" && t != "tiny" {
			return unprocessable("identifierType is invalid")
		}
		var c ogClose
		if err := strictJSON(body, &c); err != nil {
			return unprocessable(err.Error())
		}
		if chars(c.Source) > 100 || chars(c.User) > 100 || chars(c.Note) > 25000 {
			return unprocessable("a field is too long")
		}
		return http.StatusAccepted, accepted, ogClosed{Alias: alias, Body: c}
	}
	if r.URL.Path != "/v2/alerts" {
		return http.StatusNotFound, "", nil
	}
	var a ogAlert
	if err := strictJSON(body, &a); err != nil {
		return unprocessable(err.Error())
	}
	details := 0
	for k, v := range a.Details {
		details += chars(k) + chars(v)
	}
	tagsOK := len(a.Tags) <= 20
	for _, t := range a.Tags {
		tagsOK = tagsOK && chars(t) <= 50
	}
	switch {
	case a.Message == "" || chars(a.Message) > 130:
		return unprocessable("message is required and at most 130 characters")
	case chars(a.Alias) > 512 || chars(a.Entity) > 512 || chars(a.Description) > 15000:
		return unprocessable("alias, entity or description too long")
	case chars(a.Source) > 100 || chars(a.User) > 100:
		return unprocessable("source or user too long")
	case !tagsOK:
		return unprocessable("at most 20 tags of 50 characters")
	case details > 8000:
		return unprocessable("details exceed 8000 characters")
	case a.Priority != "" && !regexp.MustCompile(`^P[1-5]$`).MatchString(a.Priority):
		return unprocessable("priority is invalid")
	}
	return http.StatusAccepted, accepted, a
}

// --- Grafana: POST /api/annotations.

type gfAnnotation struct {
	DashboardUID string   `json:"dashboardUID"`
	DashboardID  int64    `json:"dashboardId"`
	PanelID      int64    `json:"panelId"`
	Time         int64    `json:"time"`
	TimeEnd      int64    `json:"timeEnd"`
	Tags         []string `json:"tags"`
	Text         string   `json:"text"`
}

func grafanaService(auth string) service {
	return func(r *http.Request, body []byte) (int, any, any) {
		if err := isPost(r, "/api/annotations", "application/json"); err != nil {
			return http.StatusNotFound, map[string]string{"message": "Not found"}, nil
		}
		if r.Header.Get("Authorization") != auth {
			return http.StatusUnauthorized, map[string]string{"message": "Unauthorized"}, nil
		}
		var a gfAnnotation
		if err := strictJSON(body, &a); err != nil {
			return http.StatusBadRequest, map[string]string{"message": "bad request data"}, nil
		}
		if a.Text == "" {
			return http.StatusBadRequest, map[string]string{"message": "text field should not be empty"}, nil
		}
		for _, t := range a.Tags {
			k, v, _ := strings.Cut(t, ":")
			if chars(strings.TrimSpace(k)) > 100 || chars(strings.TrimSpace(v)) > 100 {
				return http.StatusInternalServerError, map[string]string{"message": "Failed to save annotation"}, nil
			}
		}
		return http.StatusOK, map[string]any{"message": "Annotation added", "id": 1}, a
	}
}

// --- Datadog Events API v1: POST /api/v1/events.

type ddEvent struct {
	Title          string   `json:"title"`
	Text           string   `json:"text"`
	AlertType      string   `json:"alert_type"`
	AggregationKey string   `json:"aggregation_key"`
	DateHappened   int64    `json:"date_happened"`
	DeviceName     string   `json:"device_name"`
	Host           string   `json:"host"`
	Priority       string   `json:"priority"`
	RelatedEventID int64    `json:"related_event_id"`
	SourceTypeName string   `json:"source_type_name"`
	Tags           []string `json:"tags"`
}

func datadogService(r *http.Request, body []byte) (int, any, any) {
	bad := func(why string) (int, any, any) {
		return http.StatusBadRequest, map[string]any{"errors": []string{why}}, nil
	}
	if err := isPost(r, "/api/v1/events", "application/json"); err != nil {
		return http.StatusNotFound, map[string]any{"errors": []string{"Not Found"}}, nil
	}
	if r.Header.Get("DD-API-KEY") != testToken {
		return http.StatusForbidden, map[string]any{"errors": []string{"Forbidden"}}, nil
	}
	var ev ddEvent
	if err := strictJSON(body, &ev); err != nil {
		return bad(err.Error())
	}
	types := map[string]bool{"error": true, "warning": true, "info": true, "success": true, "user_update": true, "recommendation": true, "snapshot": true}
	switch {
	case ev.Title == "" || chars(ev.Title) > 100:
		return bad("title is required, at most 100 characters")
	case ev.Text == "" || chars(ev.Text) > 4000:
		return bad("text is required, at most 4000 characters")
	case ev.AlertType != "" && !types[ev.AlertType]:
		return bad("alert_type is invalid")
	case ev.Priority != "" && ev.Priority != "normal" && ev.Priority != "low":
		return bad("priority is invalid")
	case chars(ev.AggregationKey) > 100:
		return bad("aggregation_key is at most 100 characters")
	}
	for _, t := range ev.Tags {
		if chars(t) > 200 || t != strings.ToLower(t) {
			return bad("tag too long or not lower case: " + t)
		}
	}
	return http.StatusAccepted, map[string]any{"status": "ok", "event": map[string]any{"id": 1, "title": ev.Title}}, ev
}

// --- Sentry: POST /api/<project>/envelope/ with X-Sentry-Auth.

// sentryItem is one item of an envelope the stand-in accepted.
type sentryItem struct {
	Type    string
	Payload map[string]any
}

var (
	hex32     = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hex16     = regexp.MustCompile(`^[0-9a-f]{16}$`)
	sentryTag = regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,32}$`)
)

func sentryService(project string) service {
	return func(r *http.Request, body []byte) (int, any, any) {
		bad := func(why string) (int, any, any) { return http.StatusBadRequest, map[string]string{"detail": why}, nil }
		if err := isPost(r, "/api/"+project+"/envelope/", "application/x-sentry-envelope"); err != nil {
			return http.StatusNotFound, map[string]string{"detail": err.Error()}, nil
		}
		auth, ok := strings.CutPrefix(r.Header.Get("X-Sentry-Auth"), "Sentry ")
		fields := map[string]string{}
		for _, kv := range strings.Split(auth, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			fields[k] = v
		}
		if !ok || fields["sentry_version"] != "7" || fields["sentry_key"] == "" {
			return http.StatusUnauthorized, map[string]string{"detail": "missing authorization information"}, nil
		}
		if fields["sentry_key"] != testSentryKey {
			return http.StatusForbidden, map[string]string{"detail": "invalid api key"}, nil
		}
		rd := bufio.NewReader(bytes.NewReader(body))
		var header struct {
			EventID string `json:"event_id"`
			SentAt  string `json:"sent_at"`
			DSN     string `json:"dsn"`
		}
		line, _ := rd.ReadBytes('\n')
		if err := json.Unmarshal(line, &header); err != nil || !hex32.MatchString(header.EventID) {
			return bad("invalid envelope header")
		}
		var item struct {
			Type        string `json:"type"`
			Length      int    `json:"length"`
			ContentType string `json:"content_type"`
		}
		line, _ = rd.ReadBytes('\n')
		if err := json.Unmarshal(line, &item); err != nil || (item.Type != "event" && item.Type != "transaction") {
			return bad("invalid item header")
		}
		payload := make([]byte, item.Length)
		if _, err := io.ReadFull(rd, payload); err != nil {
			return bad("item shorter than its length")
		}
		var ev map[string]any
		if err := json.Unmarshal(payload, &ev); err != nil {
			return bad("item is not JSON")
		}
		if ev["event_id"] != header.EventID {
			return bad("event_id differs from the envelope's")
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["timestamp"])); err != nil {
			return bad("invalid timestamp")
		}
		tags, _ := ev["tags"].(map[string]any)
		for k, v := range tags {
			s, _ := v.(string)
			if !sentryTag.MatchString(k) || chars(s) > 200 || strings.Contains(s, "\n") {
				return bad("invalid tag " + k)
			}
		}
		if item.Type == "event" {
			if l := fmt.Sprint(ev["level"]); !map[string]bool{"fatal": true, "error": true, "warning": true, "info": true, "debug": true}[l] {
				return bad("invalid level")
			}
		} else {
			trace, _ := ev["contexts"].(map[string]any)["trace"].(map[string]any)
			if ev["type"] != "transaction" || trace == nil || !hex32.MatchString(fmt.Sprint(trace["trace_id"])) || !hex16.MatchString(fmt.Sprint(trace["span_id"])) {
				return bad("a transaction needs a trace context")
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["start_timestamp"])); err != nil {
				return bad("invalid start_timestamp")
			}
		}
		return http.StatusOK, map[string]string{"id": header.EventID}, sentryItem{Type: item.Type, Payload: ev}
	}
}
