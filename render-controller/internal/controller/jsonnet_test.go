package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// A Jsonnet recursion in tail position with tailstrict passes
// go-jsonnet's own frame limit (it keeps one frame) and grows the Go
// stack without end: the render worker dies at its stack limit, and the
// render is LimitExceeded saying so, while the last good render stays.
func TestATailstrictJsonnetRecursionStopsAtTheWorkersStackLimit(t *testing.T) {
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "r1", map[string]string{"main.jsonnet": "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'ok'}}\n"})
	kustomization(t, ns, "ks", "repo", nil)
	g := NewWithT(t)
	// The suite's first render may start its first worker: a loaded
	// machine takes longer than the other waits allow.
	var good *meta.Artifact
	g.Eventually(func(g Gomega) {
		ks := getKS(g, ns, "ks")
		c := renderedCondition(ks)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(ks.Status.RenderedArtifact.Revision).To(Equal("main@sha1:r1"))
		good = ks.Status.RenderedArtifact
	}, 4*timeout, poll).Should(Succeed())

	publishTree(t, ns, "repo", "r2", map[string]string{"main.jsonnet": "local f(n) = f(n + 1) tailstrict;\nf(0)\n"})
	ks := waitRendered(t, ns, "ks", metav1.ConditionFalse, meta.LimitExceededReason)
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring(
		"rendering passed its stack limit of 64 MiB: a template, value or Jsonnet function that recurses without end (a value holding itself, a tailstrict call); its render worker was stopped"))
	g.Expect(ks.Status.RenderedArtifact).To(Equal(good))
}
