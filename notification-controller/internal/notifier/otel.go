package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"time"

	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// otel sends each event as one span to an OpenTelemetry collector over
// OTLP/HTTP (the address is the traces endpoint, e.g.
// https://collector:4318/v1/traces), as Flux's otel provider does: the
// trace ID is derived from the Alert's UID and the event's revision, so
// the spans of one revision through one Alert (the source's artifact, the
// render, the sync) share a trace; the resource is the Alert
// (service.name <namespace>/<name>); the span is named after the object,
// starts at the event's time, carries the object and the metadata as
// attributes and has status ERROR for an error event, OK otherwise.
// HelmRepository events are not sent (an index is no step of a
// deployment, as in Flux).
//
// It is OTLP's JSON encoding through the dispatcher's client, not the
// OpenTelemetry SDK: an exporter batches and retries on its own, in its
// own goroutines, and would send outside the dispatcher's client, its
// address policy and its single attempt per Post.
type otel struct{ cfg Config }

func otelKind(cfg Config) (Notifier, error) { return &otel{cfg: cfg}, nil }

// OTLP/JSON messages: uint64 and fixed64 fields are decimal strings,
// trace and span IDs hex.
type (
	otlpTraces struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name string `json:"name"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes"`
		Status            otlpStatus     `json:"status"`
	}
	otlpKeyValue struct {
		Key   string        `json:"key"`
		Value otlpAnyString `json:"value"`
	}
	otlpAnyString struct {
		StringValue string `json:"stringValue"`
	}
	otlpStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message,omitempty"`
	}
)

// OTLP's enums.
const (
	otlpSpanKindInternal = 1
	otlpStatusOK         = 1
	otlpStatusError      = 2
)

func (n *otel) Post(ctx context.Context, e events.Event) error {
	if e.InvolvedObject.Kind == sourcev1.HelmRepositoryKind {
		return nil
	}
	e = withoutUserInfo(e)
	alert := alertOf(ctx)
	if alert == nil {
		alert = &notificationv1.Alert{}
	}
	revision := e.Revision
	if revision == "" {
		revision = "unknown"
	}
	traceID := sha256.Sum256([]byte(string(alert.UID) + ":" + revision))
	// The span ID is the event's and the Alert's: a delivery retried
	// after the collector took it sends the same span again.
	spanID := sha256.Sum256([]byte(string(alert.UID) + ":" + e.ID))
	start := e.Timestamp
	if start.IsZero() {
		start = time.Now()
	}
	status := otlpStatus{Code: otlpStatusOK, Message: e.Message}
	if e.Severity == events.SeverityError {
		status.Code = otlpStatusError
	}
	o := e.InvolvedObject
	attrs := []otlpKeyValue{
		otlpString("object.uid", o.UID), otlpString("object.kind", o.Kind),
		otlpString("object.name", o.Name), otlpString("object.namespace", o.Namespace),
	}
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, otlpString(k, e.Metadata[k]))
	}
	if e.Revision != "" {
		attrs = append(attrs, otlpString("revision", e.Revision))
	}
	traces := otlpTraces{ResourceSpans: []otlpResourceSpans{{
		Resource: otlpResource{Attributes: []otlpKeyValue{
			otlpString("service.name", alert.Namespace+"/"+alert.Name),
			otlpString("service.namespace", alert.Namespace),
			otlpString("service.instance.id", string(alert.UID)),
		}},
		ScopeSpans: []otlpScopeSpans{{
			Scope: otlpScope{Name: "plumb:notification-controller"},
			Spans: []otlpSpan{{
				TraceID:           hex.EncodeToString(traceID[:16]),
				SpanID:            hex.EncodeToString(spanID[:8]),
				Name:              o.Kind + ": " + o.Namespace + "/" + o.Name,
				Kind:              otlpSpanKindInternal,
				StartTimeUnixNano: strconv.FormatInt(start.UnixNano(), 10),
				EndTimeUnixNano:   strconv.FormatInt(max(time.Now().UnixNano(), start.UnixNano()), 10),
				Attributes:        attrs,
				Status:            status,
			}},
		}},
	}}}
	header := bearerOrBasic(n.cfg)
	if header == nil {
		header = http.Header{}
	}
	for k, v := range n.cfg.Headers {
		header.Set(k, v)
	}
	return n.cfg.send(ctx, request{method: http.MethodPost, url: n.cfg.Address, payload: traces, header: header})
}

func otlpString(key, value string) otlpKeyValue {
	return otlpKeyValue{Key: key, Value: otlpAnyString{StringValue: value}}
}
