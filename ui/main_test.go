package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

func TestFlagsDefaultToTokenSignInOnLoopbackAndRefuseWhatCannotWork(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (flags, error) {
		var f flags
		fs := pflag.NewFlagSet("ui", pflag.ContinueOnError)
		f.BindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return f, f.Validate()
	}
	f, err := parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Auth).To(Equal("token"))
	g.Expect(f.Listen).To(Equal("127.0.0.1:9080"))
	g.Expect(f.SessionTTL.Hours()).To(Equal(8.0))
	g.Expect(f.InsecureCookies).To(BeFalse())

	_, err = parse("--auth=basic")
	g.Expect(err).To(MatchError(ContainSubstring("--auth must be token or kubeconfig")))
	_, err = parse("--session-ttl=0s")
	g.Expect(err).To(MatchError(ContainSubstring("--session-ttl must be positive")))
}
