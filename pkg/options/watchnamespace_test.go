package options

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

func TestWatchAllNamespacesIsOnByDefaultAndFalseKeepsToTheRuntimeNamespace(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) Manager {
		var o Manager
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return o
	}
	g.Expect(parse().OnlyRuntimeNamespace).To(BeFalse())
	g.Expect(parse("--watch-all-namespaces").OnlyRuntimeNamespace).To(BeFalse())
	g.Expect(parse("--watch-all-namespaces=true").OnlyRuntimeNamespace).To(BeFalse())
	g.Expect(parse("--watch-all-namespaces=false").OnlyRuntimeNamespace).To(BeTrue())
	// The last value wins, as a component appending a flag relies on.
	g.Expect(parse("--watch-all-namespaces=false", "--watch-all-namespaces=true").OnlyRuntimeNamespace).To(BeFalse())

	var o Manager
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Lookup(WatchAllNamespacesFlag).DefValue).To(Equal("true"))
	g.Expect(fs.Parse([]string{"--watch-all-namespaces=maybe"})).NotTo(Succeed())
}
