package stream

import (
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// deployed is a NATS server as deploy/ runs it (deploy/nats/accounts.conf,
// TLS with client certificates), started by the first test that needs it.
var deployed = testenv.Lazy{Options: []testenv.Option{testenv.WithSecureNATS()}}

func TestMain(m *testing.M) {
	code := m.Run()
	deployed.Stop()
	os.Exit(code)
}

// The UI reads as the NATS user `reader`, which may only read the stream,
// what the controllers' own publisher wrote.
func TestTheIndexReadsAsTheReaderUserOfDeploy(t *testing.T) {
	g := NewWithT(t)
	env := deployed.Get(t)
	pub, err := events.NewJetStreamPublisher(options.NATS{URL: env.NATSURL, Auth: env.SecureNATS.Auth(testenv.NATSPublisher),
		Stream: streamName, StreamMaxAge: time.Hour, StreamMaxBytes: 1 << 20, QueueSize: 10}, "sync-controller", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = pub.Close(t.Context()) }()
	drift := event("Kustomization", "apps", "web", driftCorrected)
	drift.Changes = []events.Change{{Object: "Deployment/apps/web", Path: "spec.replicas", Before: "5", After: "2", Manager: "kubectl-edit"}}
	pub.Publish(complete(drift, time.Now()))

	x, err := Start(t.Context(), Config{NATS: options.NATS{URL: env.NATSURL, Stream: streamName, Auth: env.SecureNATS.Auth(testenv.NATSReader)}})
	g.Expect(err).NotTo(HaveOccurred())
	changes, done := x.Changes()
	defer done()
	g.Eventually(func() int { n, _ := x.Len(); return n }, 30*time.Second, 50*time.Millisecond).Should(Equal(1))
	g.Eventually(x.Synced(), 30*time.Second).Should(BeClosed())

	pub.Publish(complete(event("Kustomization", "apps", "web", "ReconciliationSucceeded"), time.Now()))
	g.Eventually(changes, 30*time.Second).Should(Receive(HaveField("Reason", "ReconciliationSucceeded")))
	found, _ := x.query(filter{reasons: []string{driftCorrected}}, 0, 10, MaxScanned, showAll)
	g.Expect(found).To(HaveLen(1))
	g.Expect(found[0].ev.Changes).To(Equal(drift.Changes))
}
