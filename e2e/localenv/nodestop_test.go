package localenv

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A rule of iptables -S with a quoted comment splits into the arguments
// that delete it again: the comment one argument, without its quotes.
func TestSplitRuleKeepsAQuotedCommentWhole(t *testing.T) {
	g := NewWithT(t)
	g.Expect(splitRule(`-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`)).To(Equal(
		[]string{"-A", "PREROUTING", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"}))
	g.Expect(splitRule(`-A POSTROUTING -s 10.244.0.5/32 -m comment --comment "name: \"plumb\" id: \"abc\"" -j CNI-1`)).To(Equal(
		[]string{"-A", "POSTROUTING", "-s", "10.244.0.5/32", "-m", "comment", "--comment", `name: "plumb" id: "abc"`, "-j", "CNI-1"}))
	g.Expect(splitRule("-N KUBE-SERVICES")).To(Equal([]string{"-N", "KUBE-SERVICES"}))
}

// Mount points in /proc/self/mountinfo escape spaces and such in octal.
func TestUnescapeMount(t *testing.T) {
	g := NewWithT(t)
	g.Expect(unescapeMount(`/tmp/a\040b/c`)).To(Equal("/tmp/a b/c"))
	g.Expect(unescapeMount("/tmp/plain")).To(Equal("/tmp/plain"))
}
