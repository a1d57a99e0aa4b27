package testenv

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestStartStopTwice starts and stops two environments in a row and checks
// that each works while it runs and leaves no listener and no child process
// behind.
func TestStartStopTwice(t *testing.T) {
	g := NewWithT(t)
	for round := 1; round <= 2; round++ {
		env, err := Start()
		g.Expect(err).NotTo(HaveOccurred(), "round %d", round)

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ns, err := env.Namespace(ctx, "testenv")
		g.Expect(err).NotTo(HaveOccurred())
		var got corev1.Namespace
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &got)).To(Succeed())

		apiAddr := hostPort(t, env.Config.Host)
		natsAddr := hostPort(t, env.NATSURL)
		g.Expect(strings.HasPrefix(natsAddr, "127.0.0.1:")).To(BeTrue(), "NATS binds to loopback only")
		children := childProcesses(t)
		g.Expect(children).NotTo(BeEmpty(), "etcd and kube-apiserver run as child processes")

		publishAndConsume(ctx, t, env.NATSURL)
		cancel()

		g.Expect(env.Stop()).To(Succeed())
		g.Eventually(func() bool { return listening(apiAddr) }, 30*time.Second).Should(BeFalse(), "kube-apiserver still listens")
		g.Expect(listening(natsAddr)).To(BeFalse(), "NATS still listens")
		g.Eventually(func() []int { return childProcesses(t) }, 30*time.Second).Should(BeEmpty(), "child processes left behind")
	}
}

// publishAndConsume checks that JetStream stores a message and that a
// durable consumer receives it and can acknowledge it.
func publishAndConsume(ctx context.Context, t *testing.T, natsURL string) {
	g := NewWithT(t)
	nc, err := nats.Connect(natsURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())

	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TESTENV", Subjects: []string{"testenv.>"}})
	g.Expect(err).NotTo(HaveOccurred())
	ack, err := js.Publish(ctx, "testenv.hello", []byte("hello"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ack.Stream).To(Equal("TESTENV"))

	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "reader", AckPolicy: jetstream.AckExplicitPolicy})
	g.Expect(err).NotTo(HaveOccurred())
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	var bodies []string
	for msg := range batch.Messages() {
		bodies = append(bodies, string(msg.Data()))
		g.Expect(msg.Ack()).To(Succeed())
	}
	g.Expect(bodies).To(Equal([]string{"hello"}))

	info, err := cons.Info(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Config.Durable).To(Equal("reader"))
}

func TestAssetsDirExplainsMissingBinaries(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(AssetsEnv, t.TempDir())
	_, err := AssetsDir("/nowhere")
	g.Expect(err).To(MatchError(ContainSubstring("make envtest-assets")))
}

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("not a URL with a host: %q", raw)
	}
	return u.Host
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// childProcesses lists the live (not zombie) children of this test process.
func childProcesses(t *testing.T) []int {
	t.Helper()
	self := os.Getpid()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended while we looked
		}
		// The fields after the command name, which is in parentheses.
		rest := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(rest) < 2 || rest[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(rest[1]); ppid == self {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			children = append(children, pid)
		}
	}
	return children
}
