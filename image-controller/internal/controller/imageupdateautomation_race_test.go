package controller

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/testgit"
)

// scaled is manifest with a person's edit: three replicas.
func scaled(ns, image string) string {
	return strings.Replace(manifest(ns, image), "spec:\n  template:", "spec:\n  replicas: 3\n  template:", 1)
}

// A person's commit lands on main after the automation read the branch
// and before its push is taken (testgit's BeforePush). The push is
// rejected as stale, never forced: the automation runs its setters again
// on the person's commit and pushes on top of it. Main's history is the
// old head, the person's commit, the automation's; the file holds both
// changes; status and the event name the commit that landed.
func TestAutomationLosesARaceAndCommitsOnThePersonsHead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image, srv, repo := automationFixture(t, "1.2.0")
	before, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	person := make(chan string, 1)
	srv.BeforePush(func(name string, n int) {
		if name != "app" || n != 1 {
			return
		}
		c, err := repo.Commit("main", "scale to three", testgit.Files{"deploy/app.yaml": scaled(ns, image+":1.0.0")})
		if err != nil {
			t.Error(err)
		}
		person <- c
	})

	auto := newAutomation(ns, "app", "app")
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	var personsCommit string
	g.Expect(person).To(Receive(&personsCommit))

	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auto.Status.LastPushCommit).To(Equal(head))
	g.Expect(readyOf(auto.Status.Conditions).Message).To(Equal("pushed commit '" + head[:7] + "'"))
	// Two pushes: the stale one and the one on the person's commit.
	g.Expect(srv.Pushes("app")).To(Equal(2))
	g.Expect(repo.Parents(head)).To(Equal([]string{personsCommit}))
	g.Expect(repo.Parents(personsCommit)).To(Equal([]string{before}))
	g.Expect(repo.File(head, "deploy/app.yaml")).To(Equal(scaled(ns, image+":1.2.0")))

	g.Eventually(func(g Gomega) {
		g.Expect(automationEvents(g, ns, meta.SucceededReason)).To(ConsistOf(
			HavePrefix("pushed commit '" + head[:7] + "' to branch 'main'\n")))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
