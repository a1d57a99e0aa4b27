package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"plumb.dev/e2e/localenv"
)

// A controller that dies is started again by the launcher after its
// backoff, as a Deployment's Pod would be, on the same ports (the sockets
// stay with the launcher): it is ready again at the address printed, and
// its status counts the restart.
func TestAKilledControllerIsRestartedOnItsPorts(t *testing.T) {
	g := NewWithT(t)
	c := env.Controllers[localenv.RenderController]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, before, _ := c.Status()
	pid := c.Pid()
	g.Expect(c.Kill()).To(Succeed())
	g.Eventually(func() int { _, n, _ := c.Status(); return n }).WithTimeout(time.Minute).Should(Equal(before + 1))
	g.Expect(c.WaitReady(ctx)).To(Succeed())
	g.Expect(c.Pid()).NotTo(Equal(pid))
	_, _, last := c.Status()
	g.Expect(last).To(ContainSubstring("killed"))
}
