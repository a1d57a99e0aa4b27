package events

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	natsserver "github.com/nats-io/nats-server/v2/server"
	. "github.com/onsi/gomega"

	"plumb.dev/pkg/options"
)

// TestAClientGivesUpASilentServerAndMovesToAnother: a server whose node is
// lost closes nothing; the connection goes silent. Given two servers, a
// client (Connect, as every controller makes it) notices by its pings,
// within half a minute rather than nats.go's six, and reconnects to the
// other by itself. Each server sits behind a proxy on 127.0.0.1 that can
// swallow everything both ways, as a vanished node does.
func TestAClientGivesUpASilentServerAndMovesToAnother(t *testing.T) {
	g := NewWithT(t)
	proxies := []*silencer{newSilencer(t, plainNATS(t)), newSilencer(t, plainNATS(t))}
	c, err := Connect(options.NATS{URL: proxies[0].url() + "," + proxies[1].url()}, "failover-test", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Close)
	g.Eventually(c.IsConnected, 10*time.Second, 20*time.Millisecond).Should(BeTrue())

	first := c.ConnectedUrl()
	silent := proxies[0]
	if first == proxies[1].url() {
		silent = proxies[1]
	}
	silent.silence()
	g.Eventually(c.ConnectedUrl, time.Minute, 100*time.Millisecond).Should(And(Not(Equal(first)), Not(BeEmpty())),
		"the client moved to the other server")
	g.Expect(c.Flush()).To(Succeed(), "and talks to it")
}

// plainNATS starts a NATS server on 127.0.0.1 until the test ends.
func plainNATS(t *testing.T) string {
	t.Helper()
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	return s.Addr().String()
}

// silencer forwards TCP connections to an address until silence is
// called; from then on it reads and drops what both sides send, keeping
// the connections open.
type silencer struct {
	l      net.Listener
	to     string
	silent atomic.Bool
	wg     sync.WaitGroup
}

func newSilencer(t *testing.T, to string) *silencer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silencer{l: l, to: to}
	var conns []net.Conn
	var mu sync.Mutex
	s.wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			s.wg.Go(func() { s.pipe(out, in) })
			s.wg.Go(func() { s.pipe(in, out) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *silencer) url() string { return "nats://" + s.l.Addr().String() }

func (s *silencer) silence() { s.silent.Store(true) }

// pipe copies from src to dst while the silencer is not silent.
func (s *silencer) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !s.silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
