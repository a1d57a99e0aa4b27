package notifier

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// --- An OpenTelemetry collector's OTLP/HTTP receiver: POST /v1/traces,
// an ExportTraceServiceRequest in OTLP's JSON encoding (ids in hex,
// 64-bit integers as decimal strings, enums as numbers).

type olKeyValue struct {
	Key   string `json:"key"`
	Value struct {
		StringValue string `json:"stringValue"`
	} `json:"value"`
}

type olSpan struct {
	TraceID           string       `json:"traceId"`
	SpanID            string       `json:"spanId"`
	ParentSpanID      string       `json:"parentSpanId"`
	Name              string       `json:"name"`
	Kind              int          `json:"kind"`
	StartTimeUnixNano string       `json:"startTimeUnixNano"`
	EndTimeUnixNano   string       `json:"endTimeUnixNano"`
	Attributes        []olKeyValue `json:"attributes"`
	Status            struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

type olRequest struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []olKeyValue `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"scope"`
			Spans []olSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

var (
	traceIDForm = regexp.MustCompile(`^[0-9a-f]{32}$`)
	spanIDForm  = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

func attrsOf(kvs []olKeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.StringValue
	}
	return m
}

func collectorService(auth string) service {
	return func(r *http.Request, body []byte) (int, any, any) {
		if err := isPost(r, "/v1/traces", "application/json"); err != nil {
			return http.StatusNotFound, map[string]string{}, nil
		}
		if r.Header.Get("Authorization") != auth {
			return http.StatusUnauthorized, map[string]string{}, nil
		}
		var req olRequest
		if err := strictJSON(body, &req); err != nil || len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
			return http.StatusBadRequest, map[string]string{"message": "bad request"}, nil
		}
		for _, s := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			start, err1 := strconv.ParseUint(s.StartTimeUnixNano, 10, 64)
			end, err2 := strconv.ParseUint(s.EndTimeUnixNano, 10, 64)
			if !traceIDForm.MatchString(s.TraceID) || !spanIDForm.MatchString(s.SpanID) || err1 != nil || err2 != nil ||
				end < start || s.Name == "" || s.Kind < 0 || s.Kind > 5 || s.Status.Code < 0 || s.Status.Code > 2 {
				return http.StatusBadRequest, map[string]string{"message": "bad span"}, nil
			}
		}
		return http.StatusOK, map[string]any{"partialSuccess": map[string]any{}}, req
	}
}

// TestOTELSpansShareATracePerRevision: each event is one span, named
// after its object, starting at the event's time, ERROR for an error;
// the events of one revision through one Alert share a trace, another
// revision starts another; the resource is the Alert; HelmRepository
// events are not sent; the Secret's username and password authenticate.
func TestOTELSpansShareATracePerRevision(t *testing.T) {
	g := NewWithT(t)
	s := newStandIn(t, collectorService(basicHeader("otel", "p4ss")).handle)
	cfg := Config{Type: notificationv1.OTELProvider, Address: s.URL + "/v1/traces", User: "otel", Password: "p4ss"}
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := WithAlert(context.Background(), &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "traces", UID: "a1e7-uid"}})

	source := recoveredEvent()
	source.ID, source.InvolvedObject = "e1", testEvent().InvolvedObject
	source.InvolvedObject.Kind, source.InvolvedObject.UID = sourcev1.GitRepositoryKind, "repo-uid"
	failed := testEvent()
	failed.ID = "e2"
	other := recoveredEvent()
	other.ID, other.Revision = "e3", "main@sha1:0000aaaa"
	index := recoveredEvent()
	index.InvolvedObject.Kind = sourcev1.HelmRepositoryKind
	g.Expect(n.Post(ctx, source)).To(Succeed())
	g.Expect(n.Post(ctx, failed)).To(Succeed())
	g.Expect(n.Post(ctx, other)).To(Succeed())
	g.Expect(n.Post(ctx, index)).To(Succeed())
	g.Expect(s.count()).To(Equal(3), "no span for a HelmRepository")

	var spans []olSpan
	for _, got := range s.got() {
		req := got.(olRequest)
		g.Expect(attrsOf(req.ResourceSpans[0].Resource.Attributes)).To(Equal(map[string]string{
			"service.name": "apps/traces", "service.namespace": "apps", "service.instance.id": "a1e7-uid"}))
		spans = append(spans, req.ResourceSpans[0].ScopeSpans[0].Spans...)
	}
	g.Expect(spans).To(HaveLen(3))
	g.Expect(spans[0].Name).To(Equal("GitRepository: apps/web"))
	g.Expect(spans[0].TraceID).To(Equal(spans[1].TraceID), "one revision, one trace")
	g.Expect(spans[2].TraceID).NotTo(Equal(spans[0].TraceID))
	g.Expect(spans[0].SpanID).NotTo(Equal(spans[1].SpanID))
	g.Expect(spans[1].Status.Code).To(Equal(2))
	g.Expect(spans[1].Status.Message).To(Equal("1 object drifted from Git"))
	g.Expect(spans[0].Status.Code).To(Equal(1))
	g.Expect(spans[1].StartTimeUnixNano).To(Equal(strconv.FormatInt(failed.Timestamp.UnixNano(), 10)))
	g.Expect(attrsOf(spans[1].Attributes)).To(Equal(map[string]string{
		"object.uid": "", "object.kind": "Kustomization", "object.name": "web", "object.namespace": "apps",
		"summary": "prod", "cluster": "eu-1", "revision": "main@sha1:4f3c2b1a"}))

	cfg.Password = "wrong"
	expectPostFails(t, cfg, "the otel endpoint answered 401 Unauthorized", true)
}
