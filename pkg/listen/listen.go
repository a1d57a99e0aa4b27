// Package listen binds the address flags of Plumb's servers (--metrics-addr,
// --health-addr, --storage-addr, --receiver-addr). A value is a TCP
// host:port, or fd:N for a listening socket the process inherited as file
// descriptor N.
//
// The second form is for a parent that starts the controllers itself, such
// as the local launcher of `make run` and the e2e tests
// (plumb.dev/e2e/localenv): it binds every port first, keeping each socket
// open, and hands them to the child (os/exec.Cmd.ExtraFiles). No port is
// picked by listening, closing and hoping nobody else takes it before the
// child binds it again; and a child restarted gets the same socket, so the
// addresses printed, registered as webhooks or written in artifact URLs stay
// true across restarts.
package listen

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// FDPrefix starts an address that names an inherited socket: fd:3.
const FDPrefix = "fd:"

// FD returns the address value naming inherited file descriptor n.
func FD(n int) string { return FDPrefix + strconv.Itoa(n) }

// Listen returns a TCP listener for addr: the inherited socket for fd:N,
// else a new one bound to host:port.
func Listen(addr string) (net.Listener, error) {
	rest, ok := strings.CutPrefix(addr, FDPrefix)
	if !ok {
		return net.Listen("tcp", addr)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 3 {
		return nil, fmt.Errorf("address %q: want fd:N with N an inherited file descriptor (3 or more)", addr)
	}
	f := os.NewFile(uintptr(n), addr)
	if f == nil {
		return nil, fmt.Errorf("address %q: no such file descriptor", addr)
	}
	// FileListener duplicates the descriptor; the original is not needed.
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("address %q: not a listening socket: %w", addr, err)
	}
	return l, nil
}
