package listen

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// A socket handed to a child process as fd:3 is served by the child on the
// port the parent bound.
func TestAnInheritedSocketKeepsTheParentsPort(t *testing.T) {
	if os.Getenv("LISTEN_TEST_CHILD") == "1" {
		l, err := Listen(FD(3))
		if err != nil {
			t.Fatal(err)
		}
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("hello"))
		c.Close()
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAnInheritedSocketKeepsTheParentsPort$")
	cmd.Env = append(os.Environ(), "LISTEN_TEST_CHILD=1")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := c.Read(buf); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q, %v; want hello", buf, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestListenRefusesABadDescriptor(t *testing.T) {
	for _, addr := range []string{"fd:x", "fd:1", "fd:999"} {
		if l, err := Listen(addr); err == nil {
			l.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
	}
}
