package artifact

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// startServer runs a Server of s on 127.0.0.1 until the test ends and
// returns its address.
func startServer(t *testing.T, s *Storage, opts ...ServerOption) string {
	t.Helper()
	srv := NewServer("127.0.0.1:0", s, opts...)
	addr, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addr.String()
}

// rawGet sends a keep-alive GET of path on a new connection and returns the
// connection with a reader positioned at the response.
func rawGet(t *testing.T, addr, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, "GET /"+path+" HTTP/1.1\r\nHost: artifacts\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// readBody reads a whole response and returns its status and body.
func readBody(br *bufio.Reader) (int, string, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// closedByServer reports whether err is what a client sees when the server
// closes the connection: end of stream, or a reset when the server closed
// with bytes of ours unread.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func TestServerMakesConnectionsBeyondTheCapWait(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	a, err := s.Store(context.Background(), testRef, "x.tar.gz", strings.NewReader("artifact"))
	g.Expect(err).NotTo(HaveOccurred())
	addr := startServer(t, s, WithMaxConnections(2))

	// Two clients are served and keep their connections open (keep-alive).
	var held []net.Conn
	for range 2 {
		conn, br := rawGet(t, addr, a.Path)
		code, body, err := readBody(br)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(Equal("artifact"))
		held = append(held, conn)
	}

	// A third one connects (the kernel queues it) but is not served...
	_, br := rawGet(t, addr, a.Path)
	served := make(chan string, 1)
	go func() {
		_, body, err := readBody(br)
		if err != nil {
			body = err.Error()
		}
		served <- body
	}()
	g.Consistently(served, time.Second, 50*time.Millisecond).ShouldNot(Receive())

	// ...until one of the first two goes.
	held[0].Close()
	g.Eventually(served, 10*time.Second).Should(Receive(Equal("artifact")))
}

func TestServerDisconnectsASlowlorisClient(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	// Only the header timeout is short, so only it can end the connection
	// before the test's own deadline.
	addr := startServer(t, s, WithReadHeaderTimeout(300*time.Millisecond),
		WithReadTimeout(time.Hour), WithIdleTimeout(time.Hour))

	conn, err := net.Dial("tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// The request line, then a header that never ends, a byte at a time.
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nX-Slow: "); err != nil {
			return
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()

	g.Expect(conn.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	n, err := conn.Read(make([]byte, 1024))
	g.Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the server kept the connection open")
	g.Expect(closedByServer(err)).To(BeTrue(), "read error: %v", err)
	g.Expect(n).To(BeZero(), "nothing is served to a request that never ends")
}

func TestServerClosesIdleKeepAliveConnections(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	a, err := s.Store(context.Background(), testRef, "x.tar.gz", strings.NewReader("artifact"))
	g.Expect(err).NotTo(HaveOccurred())
	// The read timeouts, which the idle wait would otherwise fall back to,
	// are long: only the idle timeout can end the connection in time.
	addr := startServer(t, s, WithIdleTimeout(300*time.Millisecond),
		WithReadTimeout(time.Hour), WithReadHeaderTimeout(time.Hour))

	conn, br := rawGet(t, addr, a.Path)
	resp, err := http.ReadResponse(br, nil)
	g.Expect(err).NotTo(HaveOccurred())
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(Equal("artifact"))
	g.Expect(resp.Close).To(BeFalse(), "the server keeps the connection alive")

	g.Expect(conn.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	_, err = br.ReadByte()
	g.Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the idle connection was kept open")
	g.Expect(closedByServer(err)).To(BeTrue(), "read error: %v", err)
}

func TestServerCutsOffAClientTooSlowToRead(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	const size = 64 << 20
	a, err := s.Store(context.Background(), testRef, "big.tar.gz", io.LimitReader(zeros{}, size))
	g.Expect(err).NotTo(HaveOccurred())
	addr := startServer(t, s, WithWriteTimeout(300*time.Millisecond),
		WithReadTimeout(time.Hour), WithIdleTimeout(time.Hour))

	conn, br := rawGet(t, addr, a.Path)
	g.Expect(conn.SetReadDeadline(time.Now().Add(time.Minute))).To(Succeed())
	resp, err := http.ReadResponse(br, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.ContentLength).To(Equal(int64(size)))
	// Read slowly: the whole body would take a few seconds.
	var got int64
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		got += int64(n)
		if err != nil {
			g.Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the server kept writing")
			g.Expect(closedByServer(err)).To(BeTrue(), "read error: %v", err)
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	g.Expect(got).To(BeNumerically("<", size), "the slow client got the whole artifact")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestAStopClosesAConnectionThatSentNoRequestAtOnce(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, 2)
	a, err := s.Store(context.Background(), testRef, "x.tar.gz", strings.NewReader("artifact"))
	g.Expect(err).NotTo(HaveOccurred())
	// The read timeouts are long: only the stop can end the connection.
	srv := NewServer("127.0.0.1:0", s, WithReadHeaderTimeout(time.Hour), WithReadTimeout(time.Hour), WithIdleTimeout(time.Hour))
	addr, err := srv.Listen()
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()

	// A connection that sends nothing, as a client's pool dials ahead...
	unused, err := net.Dial("tcp", addr.String())
	g.Expect(err).NotTo(HaveOccurred())
	defer unused.Close()
	// ...accepted before the next one, which is served and stays open.
	_, br := rawGet(t, addr.String(), a.Path)
	code, body, err := readBody(br)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal("artifact"))

	// net/http alone would hold the stop until the unused connection is
	// five seconds old; the server closes it as it stops.
	cancel()
	g.Eventually(done, 3*time.Second).Should(Receive(BeNil()))
	g.Expect(unused.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	_, err = unused.Read(make([]byte, 1))
	g.Expect(closedByServer(err)).To(BeTrue(), "read error: %v", err)
}
