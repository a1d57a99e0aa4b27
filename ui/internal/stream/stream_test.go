package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"

	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
)

const streamName = "PLUMB_EVENTS"

// natsServer is a real NATS server with JetStream, on a port and a store
// that survive a restart, so a test can take it away and bring it back.
type natsServer struct {
	t     *testing.T
	dir   string
	port  int
	srv   *natsserver.Server
	js    jetstream.JetStream
	nc    *nats.Conn
	stamp time.Time
}

// startNATS starts a server with the events stream.
func startNATS(t *testing.T) *natsServer {
	t.Helper()
	s := startEmptyNATS(t)
	s.createStream()
	return s
}

// startEmptyNATS starts a server without the stream, as before any
// controller published.
func startEmptyNATS(t *testing.T) *natsServer {
	t.Helper()
	s := &natsServer{t: t, dir: t.TempDir(), port: natsserver.RANDOM_PORT, stamp: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *natsServer) createStream() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{events.SubjectPrefix + ".>"},
		Storage: jetstream.FileStorage}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *natsServer) start() {
	s.t.Helper()
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: s.port, JetStream: true,
		StoreDir: s.dir, NoLog: true, NoSigs: true})
	if err != nil {
		s.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		s.t.Fatal("NATS did not start")
	}
	s.srv, s.port = srv, srv.Addr().(*net.TCPAddr).Port
	if s.nc, err = nats.Connect(srv.ClientURL()); err != nil {
		s.t.Fatal(err)
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		s.t.Fatal(err)
	}
}

func (s *natsServer) stop() {
	if s.nc != nil {
		s.nc.Close()
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

func (s *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// publish stores events on the stream as a controller does, each a second
// after the last, and returns their stream sequences.
func (s *natsServer) publish(evs ...events.Event) []uint64 {
	s.t.Helper()
	var seqs []uint64
	for _, e := range evs {
		s.stamp = s.stamp.Add(time.Second)
		e = complete(e, s.stamp)
		data, err := json.Marshal(e)
		if err != nil {
			s.t.Fatal(err)
		}
		seqs = append(seqs, s.publishRaw(e.Subject(), data))
	}
	return seqs
}

// complete fills in what a controller's Recorder puts on every event.
func complete(e events.Event, at time.Time) events.Event {
	if e.SchemaVersion == "" {
		e.SchemaVersion = events.SchemaVersion
	}
	if e.ID == "" {
		e.ID = events.NewID()
	}
	if e.Severity == "" {
		e.Severity = events.SeverityInfo
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = at
	}
	e.ReportingController = "sync-controller"
	return e
}

func (s *natsServer) publishRaw(subject string, data []byte) uint64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := s.js.Publish(ctx, subject, data)
	if err != nil {
		s.t.Fatal(err)
	}
	return ack.Sequence
}

func event(kind, ns, name, reason string) events.Event {
	return events.Event{InvolvedObject: events.ObjectReference{Kind: kind, Namespace: ns, Name: name},
		Reason: reason, Message: reason + " of " + name}
}

// progressing returns n events about n Kustomizations k0, k1, ….
func progressing(n int) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = event("Kustomization", "apps", fmt.Sprint("k", i), "Progressing")
	}
	return out
}

// start starts an Index on s, waits until it has read the history and
// serves its routes with auth.
func start(t *testing.T, ctx context.Context, s *natsServer, cfg Config, auth Authorizer) (*Index, *httptest.Server) {
	t.Helper()
	cfg.NATS = options.NATS{URL: s.url(), Stream: streamName}
	x, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-x.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the index did not read the history")
	}
	mux := http.NewServeMux()
	x.Routes(mux, auth)
	web := httptest.NewServer(mux)
	t.Cleanup(web.Close)
	return x, web
}

// everyone may get every object.
type everyone struct{}

func (everyone) MayGet(*http.Request, string, string, string) bool        { return true }
func (everyone) MayGetAll(*http.Request, string, string) bool             { return true }
func (everyone) MayGetApplied(*http.Request, string, string, string) bool { return true }

// showAll is a query's allowed that shows everything.
func showAll(*events.Event) (ok, stop bool) { return true, false }

// notIn may get every object but those of some namespaces, and counts its
// checks.
type notIn struct {
	mu     sync.Mutex
	denied map[string]bool
	checks int
}

func (a *notIn) MayGet(_ *http.Request, _, namespace, _ string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checks++
	return !a.denied[namespace]
}

func (a *notIn) MayGetAll(r *http.Request, kind, namespace string) bool {
	return a.MayGet(r, kind, namespace, "")
}

func (a *notIn) MayGetApplied(r *http.Request, kind, namespace, name string) bool {
	return a.MayGet(r, kind, namespace, name)
}

type eventPage struct {
	Items []struct {
		Seq uint64 `json:"seq"`
		events.Event
	} `json:"items"`
	Before  uint64 `json:"before"`
	Loading bool   `json:"loading"`
}

func get[T any](t *testing.T, web *httptest.Server, path string) (status int, body T) {
	t.Helper()
	resp, err := http.Get(web.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, body
}

func names(p eventPage) []string {
	out := make([]string, 0, len(p.Items))
	for _, e := range p.Items {
		out = append(out, e.InvolvedObject.Name)
	}
	return out
}

func TestHistoryIsReadOnStartAndNewEventsFollow(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	seqs := s.publish(event("Kustomization", "apps", "a", "ReconciliationSucceeded"),
		event("Kustomization", "apps", "b", "ReconciliationSucceeded"),
		event("GitRepository", "apps", "c", "NewArtifact"))

	x, web := start(t, ctx, s, Config{}, everyone{})
	changes, done := x.Changes()
	defer done()
	status, page := get[eventPage](t, web, "/api/events")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(page.Loading).To(BeFalse())
	g.Expect(names(page)).To(Equal([]string{"c", "b", "a"}), "newest first")
	g.Expect(page.Items[0].Seq).To(Equal(seqs[2]))
	g.Expect(page.Items[0].Reason).To(Equal("NewArtifact"))
	g.Expect(page.Before).To(BeZero(), "one page holds everything")

	s.publish(event("Kustomization", "apps", "d", "DriftCorrected"))
	g.Eventually(changes, 10*time.Second).Should(Receive(Equal(Change{Kind: "Kustomization", Namespace: "apps", Name: "d", Reason: "DriftCorrected"})))
	g.Consistently(changes, 200*time.Millisecond).ShouldNot(Receive(), "the history read at start is no news")
	_, page = get[eventPage](t, web, "/api/events")
	g.Expect(names(page)).To(Equal([]string{"d", "c", "b", "a"}))

	// A reader that stops reading never holds the index up.
	_, stuck := x.Changes()
	defer stuck()
	s.publish(progressing(changesBuffer + 10)...)
	g.Eventually(func() int { n, _ := x.Len(); return n }, 10*time.Second).Should(Equal(4 + changesBuffer + 10))
}

func TestFiltersAndPaging(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	failed := event("Kustomization", "shop", "web", "BuildFailed")
	failed.Severity = events.SeverityError
	s.publish(event("Kustomization", "apps", "web", "ReconciliationSucceeded"),
		event("GitRepository", "apps", "web", "NewArtifact"),
		failed,
		event("Kustomization", "shop", "db", "ReconciliationSucceeded"))
	_, web := start(t, ctx, s, Config{}, everyone{})

	for query, want := range map[string][]string{
		"kind=kustomization":                 {"db", "web", "web"}, // route kinds are lower case
		"kind=GitRepository":                 {"web"},
		"namespace=shop":                     {"db", "web"},
		"namespace=shop&name=web":            {"web"},
		"reason=ReconciliationSucceeded":     {"db", "web"},
		"severity=error":                     {"web"},
		"kind=kustomization&severity=error":  {"web"},
		"namespace=nowhere":                  {},
		"reason=ReconciliationSucceeded&x=1": {"db", "web"},
	} {
		status, page := get[eventPage](t, web, "/api/events?"+query)
		g.Expect(status).To(Equal(http.StatusOK), query)
		g.Expect(names(page)).To(Equal(want), query)
	}

	// Pages of two, newest first, following before=.
	var seen []uint64
	path := "/api/events?limit=2"
	for range 3 {
		_, page := get[eventPage](t, web, path)
		for _, e := range page.Items {
			seen = append(seen, e.Seq)
		}
		if page.Before == 0 {
			break
		}
		path = fmt.Sprintf("/api/events?limit=2&before=%d", page.Before)
	}
	g.Expect(seen).To(Equal([]uint64{4, 3, 2, 1}))

	for _, bad := range []string{"limit=0", "limit=-3", "limit=many", "before=0", "before=x", "before=-1"} {
		status, _ := get[eventPage](t, web, "/api/events?"+bad)
		g.Expect(status).To(Equal(http.StatusBadRequest), bad)
	}
}

func TestLimitIsCapped(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	s.publish(progressing(MaxLimit + 20)...)
	_, web := start(t, ctx, s, Config{}, everyone{})

	_, page := get[eventPage](t, web, "/api/events?limit=100000")
	g.Expect(page.Items).To(HaveLen(MaxLimit))
	g.Expect(page.Before).To(Equal(page.Items[MaxLimit-1].Seq))
	_, page = get[eventPage](t, web, "/api/events")
	g.Expect(page.Items).To(HaveLen(DefaultLimit))
	_, page = get[eventPage](t, web, fmt.Sprintf("/api/events?limit=100000&before=%d", 21))
	g.Expect(page.Items).To(HaveLen(20))
	g.Expect(page.Before).To(BeZero())
}

type driftPage struct {
	Items  []DriftEntry `json:"items"`
	Before uint64       `json:"before"`
}

func TestDriftTimeline(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	change := events.Change{Object: "Deployment/apps/web", Path: "spec.replicas", Before: "5", After: "2", Manager: "kubectl-edit"}
	detected := event("Kustomization", "apps", "web", driftDetected)
	detected.Revision = "main@sha1:abc"
	detected.Changes = []events.Change{change}
	corrected := detected
	corrected.Reason = driftCorrected
	corrected.Metadata = map[string]string{"latency": "183.456789ms", "objects": "1"}
	other := event("Kustomization", "shop", "db", driftCorrected)
	other.Changes = []events.Change{{Object: "ConfigMap/shop/db", Path: "data.key", Before: `"x"`, After: `"y"`}}
	other.Metadata = map[string]string{"latency": "not a duration"}
	s.publish(detected, corrected, event("Kustomization", "apps", "web", "ReconciliationSucceeded"), other)
	_, web := start(t, ctx, s, Config{}, everyone{})

	status, page := get[driftPage](t, web, "/api/drift")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(page.Items).To(HaveLen(3), "only drift events")
	g.Expect(page.Items[0]).To(And(HaveField("Name", "db"), HaveField("Latency", "")))
	g.Expect(page.Items[1]).To(Equal(DriftEntry{Seq: 2, Time: page.Items[1].Time, Kind: "Kustomization", Namespace: "apps", Name: "web",
		Revision: "main@sha1:abc", Reason: driftCorrected, Severity: events.SeverityInfo, Message: "DriftDetected of web",
		Changes: []DriftChange{{Change: change}}, Latency: "183ms"}))
	g.Expect(page.Items[2]).To(And(HaveField("Reason", driftDetected), HaveField("Latency", ""), HaveField("Changes", []DriftChange{{Change: change}})))

	// The JSON names of the contract.
	resp, err := http.Get(web.URL + "/api/drift?namespace=apps&limit=1")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var raw struct {
		Items  []map[string]any `json:"items"`
		Before uint64           `json:"before"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&raw)).To(Succeed())
	g.Expect(raw.Items).To(HaveLen(1))
	g.Expect(raw.Items[0]).To(And(HaveKeyWithValue("latency", "183ms"), HaveKeyWithValue("seq", 2.0), HaveKey("time"),
		HaveKeyWithValue("changes", ContainElement(HaveKeyWithValue("manager", "kubectl-edit")))))
	g.Expect(raw.Before).To(Equal(uint64(2)))

	// One object; and the events whose changes touch one applied object.
	_, page = get[driftPage](t, web, "/api/drift?kind=kustomization&namespace=shop&name=db")
	g.Expect(page.Items).To(HaveLen(1))
	_, page = get[driftPage](t, web, "/api/drift?object=Deployment/apps/web")
	g.Expect(page.Items).To(HaveLen(2))
}

func TestAuthorizerHidesEventsOfForbiddenObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	var evs []events.Event
	for i := range 30 {
		evs = append(evs, event("Kustomization", "secret", "hidden", driftCorrected), event("Kustomization", "apps", fmt.Sprint("k", i), driftCorrected))
	}
	s.publish(evs...)
	auth := &notIn{denied: map[string]bool{"secret": true}}
	_, web := start(t, ctx, s, Config{}, auth)

	// namespaces returns the namespaces of one page's entries of either
	// route, and its next before=.
	namespaces := func(path string) ([]string, uint64) {
		var out []string
		if strings.HasPrefix(path, "/api/drift") {
			_, page := get[driftPage](t, web, path)
			for _, e := range page.Items {
				out = append(out, e.Namespace)
			}
			return out, page.Before
		}
		_, page := get[eventPage](t, web, path)
		for _, e := range page.Items {
			out = append(out, e.InvolvedObject.Namespace)
		}
		return out, page.Before
	}
	for _, route := range []string{"/api/events", "/api/drift"} {
		shown, _ := namespaces(route + "?limit=10")
		g.Expect(shown).To(HaveLen(10), "a page is filled from what the user may see")
		g.Expect(shown).NotTo(ContainElement("secret"))
		// Pages past the forbidden ones reach every visible event and no
		// other.
		total := 0
		path := route + "?limit=7"
		for {
			shown, before := namespaces(path)
			g.Expect(shown).To(HaveEach("apps"))
			total += len(shown)
			if before == 0 {
				break
			}
			path = fmt.Sprintf("%s?limit=7&before=%d", route, before)
		}
		g.Expect(total).To(Equal(30), route)
	}
	auth.mu.Lock()
	checks := auth.checks
	auth.mu.Unlock()
	_, page := get[eventPage](t, web, "/api/events?namespace=secret")
	g.Expect(page.Items).To(BeEmpty())
	auth.mu.Lock()
	g.Expect(auth.checks-checks).To(Equal(2), "one check of the namespace, one of the object: not one per event")
	auth.mu.Unlock()
}

func TestTheIndexStaysWithinItsBounds(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	evs := progressing(250)
	s.publish(evs...)
	x, web := start(t, ctx, s, Config{MaxEvents: 100}, everyone{})
	n, _ := x.Len()
	g.Expect(n).To(Equal(100))
	_, page := get[eventPage](t, web, "/api/events?limit=500")
	g.Expect(page.Items).To(HaveLen(100))
	g.Expect(page.Items[0].Seq).To(Equal(uint64(250)))
	g.Expect(page.Items[99].Seq).To(Equal(uint64(151)), "the oldest went first")

	s.publish(evs[:50]...)
	g.Eventually(func() uint64 { return x.lastSeq() }, 10*time.Second).Should(Equal(uint64(300)))
	n, _ = x.Len()
	g.Expect(n).To(Equal(100))

	// Bounded in bytes as well: a few big events push many small ones out.
	small := startNATS(t)
	small.publish(evs[:20]...)
	big := event("Kustomization", "apps", "big", "BuildFailed")
	big.Message = strings.Repeat("x", 4096)
	small.publish(big, big, big)
	const maxBytes = 10 << 10
	y, yweb := start(t, ctx, small, Config{MaxBytes: maxBytes}, everyone{})
	count, bytes := y.Len()
	g.Expect(bytes).To(BeNumerically("<=", maxBytes))
	g.Expect(count).To(BeNumerically("<", 10))
	g.Expect(count).To(BeNumerically(">=", 2))

	// An event larger than any controller writes is not kept at all.
	huge := event("Kustomization", "apps", "huge", "BuildFailed")
	huge.Message = strings.Repeat("x", MaxEventBytes)
	small.publish(huge)
	small.publishRaw("plumb.events.kustomization.apps.bad", []byte(`{"not": "an event"}`))
	small.publish(event("Kustomization", "apps", "after", "Progressing"))
	g.Eventually(func() uint64 { return y.lastSeq() }, 10*time.Second).Should(Equal(uint64(26)))
	_, page = get[eventPage](t, yweb, "/api/events?limit=3")
	g.Expect(names(page)).To(Equal([]string{"after", "big", "big"}), "the huge and the undecodable events were skipped")
}

func TestARestartedIndexRereadsTheStream(t *testing.T) {
	g := NewWithT(t)
	s := startNATS(t)
	s.publish(event("Kustomization", "apps", "a", driftDetected), event("Kustomization", "apps", "a", driftCorrected))

	x, web := start(t, t.Context(), s, Config{}, everyone{})
	_, before := get[driftPage](t, web, "/api/drift")
	g.Expect(before.Items).To(HaveLen(2))
	x.Close()
	g.Eventually(s.srv.NumClients, 10*time.Second, 10*time.Millisecond).Should(Equal(1), "only the test's own connection is left")

	s.publish(event("Kustomization", "apps", "a", driftDetected))
	_, web = start(t, t.Context(), s, Config{}, everyone{})
	_, after := get[driftPage](t, web, "/api/drift")
	g.Expect(after.Items).To(HaveLen(3))
	g.Expect(after.Items[1:]).To(Equal(before.Items), "the same history, from JetStream")
}

func TestTheIndexFollowsTheStreamAcrossANATSOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s := startNATS(t)
	s.publish(event("Kustomization", "apps", "before", "Progressing"))
	x, web := start(t, ctx, s, Config{}, everyone{})
	changes, done := x.Changes()
	defer done()

	s.stop()
	_, page := get[eventPage](t, web, "/api/events")
	g.Expect(names(page)).To(Equal([]string{"before"}), "what it has is still served while NATS is away")
	s.start()
	s.publish(event("Kustomization", "apps", "after", "Progressing"))
	g.Eventually(changes, 30*time.Second).Should(Receive(HaveField("Name", "after")))
	_, page = get[eventPage](t, web, "/api/events")
	g.Expect(names(page)).To(Equal([]string{"after", "before"}), "nothing read twice")
}

func TestAStreamCreatedAgainIsReadFromItsStart(t *testing.T) {
	g := NewWithT(t)
	s := startNATS(t)
	s.publish(event("Kustomization", "apps", "old1", "Progressing"), event("Kustomization", "apps", "old2", "Progressing"),
		event("Kustomization", "apps", "old3", "Progressing"))
	x, web := start(t, t.Context(), s, Config{}, everyone{})

	g.Expect(s.js.DeleteStream(t.Context(), streamName)).To(Succeed())
	s.createStream()
	s.publish(event("Kustomization", "apps", "new", "Progressing"))
	g.Eventually(func() []string {
		_, page := get[eventPage](t, web, "/api/events")
		return names(page)
	}, 30*time.Second, 50*time.Millisecond).Should(Equal([]string{"new"}))
	g.Expect(x.Check(nil)).To(Succeed())
}

func TestTheIndexWaitsForAStreamNoControllerCreatedYet(t *testing.T) {
	g := NewWithT(t)
	s := startEmptyNATS(t)
	x, web := start(t, t.Context(), s, Config{}, everyone{})
	changes, done := x.Changes()
	defer done()
	_, page := get[eventPage](t, web, "/api/events")
	g.Expect(page.Items).To(BeEmpty())
	g.Expect(page.Loading).To(BeFalse(), "there is no history to read")

	s.createStream()
	s.publish(event("Kustomization", "apps", "first", "ReconciliationSucceeded"))
	g.Eventually(changes, 30*time.Second).Should(Receive(HaveField("Name", "first")))
}

func TestStartRefusesBoundsThatCannotWork(t *testing.T) {
	g := NewWithT(t)
	_, err := Start(context.Background(), Config{MaxEvents: -1, NATS: options.NATS{URL: "nats://127.0.0.1:1", Stream: streamName}})
	g.Expect(err).To(MatchError(ContainSubstring("--events-max")))
	x, err := Start(context.Background(), Config{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(x.Synced()).To(BeClosed(), "without NATS there is no history to wait for")
}

// hidesApplied may get every Kustomization but none of the objects they
// applied in the namespaces named, and counts its checks of those.
type hidesApplied struct {
	everyone
	mu      sync.Mutex
	denied  map[string]bool
	applied []string
}

func (a *hidesApplied) MayGetApplied(_ *http.Request, kind, namespace, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = append(a.applied, kind+"|"+namespace+"|"+name)
	return !a.denied[namespace]
}

func TestADriftChangeShowsItsValuesOnlyForAnObjectTheUserMayGet(t *testing.T) {
	g := NewWithT(t)
	s := startNATS(t)
	e := event("Kustomization", "apps", "web", driftDetected)
	e.Changes = []events.Change{
		{Object: "Deployment/apps/web", Path: "spec.replicas", Before: "5", After: "2", Manager: "kubectl-edit"},
		{Object: "Secret/kube-system/admin", Path: "data.token", Before: `"c2VjcmV0"`, After: `"b3RoZXI="`, Manager: "kubectl-edit"},
		{Object: "ClusterRole/admin", Path: "rules", Before: `[{"verbs":["*"]}]`, After: "[]"},
		{Object: "Deployment/apps/web/extra", Path: "spec", Before: "1", After: "2"},
		{Object: "Deployment/apps/web", Path: "spec.paused", Before: "true"},
	}
	s.publish(e)
	auth := &hidesApplied{denied: map[string]bool{"kube-system": true, "": true}}
	_, web := start(t, t.Context(), s, Config{}, auth)

	status, page := get[driftPage](t, web, "/api/drift")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(page.Items).To(HaveLen(1))
	g.Expect(page.Items[0].Changes).To(Equal([]DriftChange{
		{Change: e.Changes[0]},
		{Change: events.Change{Object: "Secret/kube-system/admin", Path: "data.token"}, Hidden: true},
		{Change: events.Change{Object: "ClusterRole/admin", Path: "rules"}, Hidden: true},
		{Change: events.Change{Object: "Deployment/apps/web/extra", Path: "spec"}, Hidden: true},
		{Change: e.Changes[4]},
	}))
	auth.mu.Lock()
	g.Expect(auth.applied).To(ConsistOf("Deployment|apps|web", "Secret|kube-system|admin", "ClusterRole||admin"),
		"one check per object: none for text that names no object")
	auth.mu.Unlock()

	resp, err := http.Get(web.URL + "/api/drift")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var raw struct {
		Items []struct {
			Changes []map[string]any `json:"changes"`
		} `json:"items"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&raw)).To(Succeed())
	g.Expect(raw.Items[0].Changes[1]).To(Equal(map[string]any{"object": "Secret/kube-system/admin", "path": "data.token", "hidden": true}),
		"no value, no manager of a hidden change")

	// The event history shows the same event's changes by the same rule.
	resp, err = http.Get(web.URL + "/api/events")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var history struct {
		Items []struct {
			Changes []map[string]any `json:"changes"`
		} `json:"items"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&history)).To(Succeed())
	g.Expect(history.Items).To(HaveLen(1))
	g.Expect(history.Items[0].Changes).To(Equal([]map[string]any{
		{"object": "Deployment/apps/web", "path": "spec.replicas", "before": "5", "after": "2", "manager": "kubectl-edit"},
		{"object": "Secret/kube-system/admin", "path": "data.token"},
		{"object": "ClusterRole/admin", "path": "rules"},
		{"object": "Deployment/apps/web/extra", "path": "spec"},
		{"object": "Deployment/apps/web", "path": "spec.paused", "before": "true"},
	}), "/api/events hides what /api/drift hides")
	status, again := get[driftPage](t, web, "/api/drift")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(again.Items[0].Changes[0]).To(Equal(DriftChange{Change: e.Changes[0]}), "the index's copy of the event is unchanged")
}

// refusesAll may get nothing, and counts its checks.
type refusesAll struct {
	mu     sync.Mutex
	checks int
	// block makes each check wait for the request's end.
	block bool
}

func (a *refusesAll) check(r *http.Request) bool {
	a.mu.Lock()
	a.checks++
	a.mu.Unlock()
	if a.block {
		<-r.Context().Done()
	}
	return false
}

func (a *refusesAll) MayGet(r *http.Request, _, _, _ string) bool        { return a.check(r) }
func (a *refusesAll) MayGetAll(r *http.Request, _, _ string) bool        { return a.check(r) }
func (a *refusesAll) MayGetApplied(r *http.Request, _, _, _ string) bool { return a.check(r) }

func TestAPageStopsAtItsCheckBudgetAndSaysWhereToGoOn(t *testing.T) {
	g := NewWithT(t)
	s := startNATS(t)
	var evs []events.Event
	for i := range MaxChecks {
		evs = append(evs, event("Kustomization", fmt.Sprint("ns", i), "k", "Progressing"))
	}
	s.publish(evs...)
	auth := &refusesAll{}
	_, web := start(t, t.Context(), s, Config{}, auth)

	status, page := get[eventPage](t, web, "/api/events")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(page.Items).To(BeEmpty())
	g.Expect(page.Before).NotTo(BeZero(), "the page stopped early: the next one goes on")
	auth.mu.Lock()
	g.Expect(auth.checks).To(Equal(MaxChecks), "a user who sees nothing costs at most MaxChecks reviews a page")
	auth.mu.Unlock()
	pages := 1
	for page.Before != 0 {
		before := page.Before
		status, page = get[eventPage](t, web, fmt.Sprintf("/api/events?before=%d", before))
		g.Expect(status).To(Equal(http.StatusOK))
		g.Expect(page.Before).To(Or(BeZero(), BeNumerically("<", before)), "each page goes further back")
		pages++
	}
	auth.mu.Lock()
	g.Expect(auth.checks).To(Equal(2*MaxChecks), "every event was decided once: two checks each (namespace, object)")
	auth.mu.Unlock()
	g.Expect(pages).To(Equal(2))
}

func TestAPageStopsAtItsDeadline(t *testing.T) {
	g := NewWithT(t)
	s := startNATS(t)
	s.publish(event("Kustomization", "apps", "web", "Progressing"))
	auth := &refusesAll{block: true}
	x, web := start(t, t.Context(), s, Config{}, auth)
	x.deadline = 50 * time.Millisecond

	status, page := get[eventPage](t, web, "/api/events")
	g.Expect(status).To(Equal(http.StatusOK), "the check that waits ends with the page's deadline")
	g.Expect(page.Items).To(BeEmpty())
	g.Expect(page.Before).To(Equal(uint64(2)), "the event is still to be decided: the next page starts with it")
}

func TestAQueryLooksAtABoundedNumberOfEventsAndGoesOnWhereItStopped(t *testing.T) {
	g := NewWithT(t)
	x := newIndex((&Config{}).withDefaults())
	for i := range 1000 {
		name := "other"
		if i < 3 {
			name = "wanted"
		}
		data, err := json.Marshal(complete(event("Kustomization", "apps", name, "Progressing"), time.Now()))
		g.Expect(err).NotTo(HaveOccurred())
		x.add(uint64(i+1), data)
	}
	f := filter{name: "wanted"}
	found, next := x.query(f, 0, 10, 300, showAll)
	g.Expect(found).To(BeEmpty())
	g.Expect(next).To(Equal(uint64(701)), "300 looked at, from 1000 down to 701")
	var all []uint64
	for next != 0 {
		found, next = x.query(f, next, 10, 300, showAll)
		for _, e := range found {
			all = append(all, e.seq)
		}
	}
	g.Expect(all).To(Equal([]uint64{3, 2, 1}))
}
