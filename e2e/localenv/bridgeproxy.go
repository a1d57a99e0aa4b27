package localenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// bridgeProxy forwards TCP connections from the bridge's address to a
// server of the launcher on 127.0.0.1, on the same port: the way a real
// node's Pods reach the API server (advertised at nodeIP), the Git server
// and the chart repositories, which stay on the loopback address for
// everything else. The bridge's address is the host's own, on a bridge
// with no route out, so nothing outside the machine reaches them; and
// the servers themselves stay bound to 127.0.0.1 (no route_localnet,
// no iptables rule of the launcher's own).
type bridgeProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

// exposeOnBridge forwards nodeIP:<port of addr> to addr (127.0.0.1:port)
// and returns the bridge's address.
func exposeOnBridge(addr string) (*bridgeProxy, string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, port))
	if err != nil {
		return nil, "", fmt.Errorf("forwarding %s to the bridge: %w", addr, err)
	}
	p := &bridgeProxy{ln: ln, target: addr, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, ln.Addr().String(), nil
}

func (p *bridgeProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			in.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(in)
			out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				return
			}
			if !p.track(out) {
				out.Close()
				return
			}
			defer p.untrack(out)
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				// Half-close so the other side sees the end of the stream,
				// as a direct connection would.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(out, in)
			go pipe(in, out)
			<-done
			<-done
		}()
	}
}

func (p *bridgeProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *bridgeProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Close stops accepting, ends the connections open and waits for them.
func (p *bridgeProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
