package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
)

// TestAClusterThatLosesAServerInABurstDeliversEveryEventOnce runs what
// deploy/components/nats-cluster runs, in process: three NATS servers
// clustered with JetStream, the events stream kept on all three
// (--nats-stream-replicas=3), a publisher and notification-controller's
// dispatcher given all three URLs. Both clients are on the server that
// leads the stream; it is stopped in the middle of a burst of events. Every
// event reaches the provider (a stand-in on 127.0.0.1) exactly once, the
// stream stores each once, the consumer ends with nothing unacknowledged,
// and both clients are connected again, to the servers left, by
// themselves.
func TestAClusterThatLosesAServerInABurstDeliversEveryEventOnce(t *testing.T) {
	g := NewWithT(t)
	cluster := startNATSCluster(t, 3)
	opts := options.NATS{URL: cluster.urls(), Stream: options.DefaultStream, StreamMaxAge: time.Hour,
		StreamMaxBytes: 64 << 20, StreamReplicas: 3, QueueSize: 1000}

	// The server is lost while the provider takes the n/10th event, before
	// it answers: the acknowledgement of that event, and of those before
	// it not yet replicated, go to a server that is gone.
	const n = 300
	var (
		// leader is the server to stop, the stream's leader.
		leader  atomic.Int32
		stopped = make(chan struct{})
		stop    sync.Once
		// stoppedAt is when the server was lost, for the log.
		stoppedAt time.Time
	)
	provider := &standIn{took: func(got int) {
		if got == n/10 {
			stop.Do(func() {
				i := int(leader.Load())
				s := cluster.servers[i]
				t.Logf("stopping %s (%s) with %d of %d events handed to the publisher, %d delivered",
					s.Name(), strings.Join(cluster.roles(i), ", "), n/2, n, got)
				s.Shutdown()
				stoppedAt = time.Now()
				close(stopped)
			})
		}
	}}
	srv := httptest.NewServer(provider)
	t.Cleanup(srv.Close)
	// Rate limiting off, so only the dispatcher's memory of delivered
	// events stands between a redelivery and the provider; a short ack
	// wait, so an event whose acknowledgement was lost comes back within
	// the test.
	td, _ := newTestDispatcher(t, notificationv1.GenericProvider, srv.URL,
		"--rate-limit-interval=0", "--nats-ack-wait=5s", "--delivery-retries=4")
	d := td.Dispatcher
	d.NATS = opts
	var notSentAgain atomic.Int32
	d.Log = funcr.New(func(prefix, args string) {
		if strings.Contains(args, "not sent again") {
			notSentAgain.Add(1)
		}
		t.Log(prefix, args)
	}, funcr.Options{})
	runDispatcher(t, d)

	p, err := events.NewJetStreamPublisher(opts, "sync-controller", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { closeWithin(t, p) })

	observer, err := events.Connect(opts, "test-observer", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(observer.Close)
	js, err := jetstream.New(observer.Conn)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The dispatcher created the stream (three copies) and its consumer.
	g.Eventually(func(g Gomega) {
		info, ci := streamState(ctx, g, js)
		g.Expect(info.Config.Replicas).To(Equal(3))
		// Until the cluster has placed them, the infos carry no
		// cluster part.
		g.Expect(info.Cluster).NotTo(BeNil())
		g.Expect(ci.Cluster).NotTo(BeNil())
		g.Expect(info.Cluster.Replicas).To(HaveLen(2))
		g.Expect(ci.Cluster.Replicas).To(HaveLen(2), "the consumer is kept on three servers too")
		i := cluster.index(info.Cluster.Leader)
		g.Expect(i).NotTo(Equal(-1))
		leader.Store(int32(i))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	// The stream leader is the worst server to lose: make it lead the
	// consumer too, and hold both clients.
	target := int(leader.Load())
	cluster.leadConsumer(t, observer, target)
	for _, name := range []string{ControllerName, "sync-controller"} {
		cluster.move(t, name, target)
	}

	// Half the burst before the loss, half right after it, while the
	// cluster elects new leaders.
	ids := make([]string, 0, n)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			e := kustomizationEvent(events.SeverityInfo, kustomizev1.AppliedReason, fmt.Sprintf("event %d", i), "main@sha1:1111111")
			ids = append(ids, e.ID)
			p.Publish(*e)
		}
	}
	publish(0, n/2)
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the provider did not receive the first events")
	}
	publish(n/2, n)
	lost := cluster.servers[target]

	// Every event delivered, and acknowledged in the end: nothing waits
	// for a redelivery that could still reach the provider.
	g.Eventually(func(g Gomega) {
		g.Expect(delivered(t, provider)).To(HaveLen(n))
		info, ci := streamState(ctx, g, js)
		g.Expect(info.State.Msgs).To(Equal(uint64(n)), "each event stored once, a publish retried across the failover too")
		g.Expect(ci.NumAckPending).To(BeZero())
		g.Expect(ci.NumPending).To(BeZero())
		g.Expect(ci.AckFloor.Stream).To(Equal(info.State.LastSeq), "every event acknowledged")
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	recovered := time.Since(stoppedAt)

	got := delivered(t, provider)
	var twice []string
	for id, count := range got {
		if count != 1 {
			twice = append(twice, fmt.Sprintf("%s ×%d", id, count))
		}
	}
	g.Expect(twice).To(BeEmpty(), "delivered more than once")
	g.Expect(slices.Sorted(maps.Keys(got))).To(Equal(slices.Sorted(slices.Values(ids))), "the events published, each one")
	g.Expect(p.Len()).To(BeZero())

	// Reconnected by themselves, to a server that is still there.
	c := d.stream.conn.Load()
	g.Expect(c.IsConnected()).To(BeTrue())
	g.Expect(c.ConnectedServerName()).NotTo(Equal(lost.Name()))
	g.Eventually(func() int { return cluster.serverOf("sync-controller") }).Should(And(Not(Equal(-1)), Not(Equal(target))))
	t.Logf("all %d events delivered and acknowledged %s after the loss; %d redeliveries not sent again to the provider",
		n, recovered.Round(100*time.Millisecond), notSentAgain.Load())
}

// streamState returns the events stream and notification-controller's
// consumer as the cluster reports them.
func streamState(ctx context.Context, g Gomega, js jetstream.JetStream) (*jetstream.StreamInfo, *jetstream.ConsumerInfo) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, options.DefaultStream)
	g.Expect(err).NotTo(HaveOccurred())
	info, err := s.Info(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := s.Consumer(ctx, ControllerName)
	g.Expect(err).NotTo(HaveOccurred())
	ci, err := c.Info(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	return info, ci
}

// natsCluster is NATS servers clustered with JetStream on 127.0.0.1, set
// up as deploy/components/nats-cluster sets them up: a server name and a
// store of its own each, and routes to every server, its own included
// (which a server recognises and skips).
type natsCluster struct {
	servers []*natsserver.Server
}

func startNATSCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	// Every server names every cluster port in its routes, so the ports
	// are chosen before the servers start.
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		routes[i] = &url.URL{Scheme: "nats", Host: l.Addr().String()}
		l.Close()
	}
	c := &natsCluster{}
	for i := range n {
		s, err := natsserver.NewServer(&natsserver.Options{
			ServerName: fmt.Sprintf("nats-%d", i),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    natsserver.ClusterOpts{Name: "plumb", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
			NoLog:      true,
			NoSigs:     true,
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatalf("NATS server %d did not start", i)
		}
		c.servers = append(c.servers, s)
	}
	NewWithT(t).Eventually(func() bool {
		return slices.ContainsFunc(c.servers, (*natsserver.Server).JetStreamIsLeader)
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the JetStream cluster elects a leader")
	return c
}

// urls is the comma-separated list of the servers' client URLs, as
// --nats-url takes it.
func (c *natsCluster) urls() string {
	var out []string
	for _, s := range c.servers {
		out = append(out, s.ClientURL())
	}
	return strings.Join(out, ",")
}

// index returns the index of the server named name, or -1.
func (c *natsCluster) index(name string) int {
	return slices.IndexFunc(c.servers, func(s *natsserver.Server) bool { return s.Name() == name })
}

// serverOf returns the index of the running server a client named name is
// connected to, or -1.
func (c *natsCluster) serverOf(name string) int {
	for i, s := range c.servers {
		if !s.Running() {
			continue
		}
		if _, ok := c.conn(s, name); ok {
			return i
		}
	}
	return -1
}

func (c *natsCluster) conn(s *natsserver.Server, name string) (uint64, bool) {
	conns, err := s.Connz(&natsserver.ConnzOptions{})
	if err != nil {
		return 0, false
	}
	for _, ci := range conns.Conns {
		if ci.Name == name {
			return ci.Cid, true
		}
	}
	return 0, false
}

// move disconnects the client named name from its server until it
// reconnects to server i (a nats.go client goes through its servers in
// turn).
func (c *natsCluster) move(t *testing.T, name string, i int) {
	t.Helper()
	for range 10 {
		var at int
		NewWithT(t).Eventually(func() int { at = c.serverOf(name); return at }, 30*time.Second, 20*time.Millisecond).
			ShouldNot(Equal(-1), "client %s is connected", name)
		if at == i {
			return
		}
		if cid, ok := c.conn(c.servers[at], name); ok {
			_ = c.servers[at].DisconnectClientByID(cid)
		}
	}
	t.Fatalf("client %s did not reconnect to server %d", name, i)
}

// leadConsumer has server i lead notification-controller's consumer:
// its leader steps down until the cluster elects server i.
func (c *natsCluster) leadConsumer(t *testing.T, nc *events.Conn, i int) {
	t.Helper()
	s := c.servers[i]
	subject := "$JS.API.CONSUMER.LEADER.STEPDOWN." + options.DefaultStream + "." + ControllerName
	for range 20 {
		var leads bool
		NewWithT(t).Eventually(func() bool {
			leads = s.JetStreamIsConsumerLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, options.DefaultStream, ControllerName)
			return leads || slices.ContainsFunc(c.servers, func(o *natsserver.Server) bool {
				return o.JetStreamIsConsumerLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, options.DefaultStream, ControllerName)
			})
		}, 30*time.Second, 20*time.Millisecond).Should(BeTrue(), "the consumer has a leader")
		if leads {
			return
		}
		_, _ = nc.Request(subject, nil, 5*time.Second)
	}
	t.Fatalf("server %d did not become the consumer's leader", i)
}

// roles names what server i leads of the JetStream cluster.
func (c *natsCluster) roles(i int) []string {
	s := c.servers[i]
	var roles []string
	if s.JetStreamIsLeader() {
		roles = append(roles, "meta leader")
	}
	if s.JetStreamIsStreamLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, options.DefaultStream) {
		roles = append(roles, "stream leader")
	}
	if s.JetStreamIsConsumerLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, options.DefaultStream, ControllerName) {
		roles = append(roles, "consumer leader")
	}
	return append(roles, "the clients' server")
}

// runDispatcher runs d until the test ends.
func runDispatcher(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the dispatcher did not stop")
		}
	})
}

// closeWithin closes p, sending what it still holds.
func closeWithin(t *testing.T, p *events.JetStreamPublisher) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Error(err)
	}
}

// delivered counts the deliveries the provider received, by event id.
func delivered(t *testing.T, s *standIn) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, b := range s.bodies() {
		var e events.Event
		if err := json.Unmarshal([]byte(b), &e); err != nil {
			t.Fatalf("the provider received %q: %v", b, err)
		}
		got[e.ID]++
	}
	return got
}
