package options

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"plumb.dev/pkg/artifact"
)

func parseStorage(t *testing.T, args ...string) (Storage, error) {
	t.Helper()
	var o Storage
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o, o.Validate()
}

func TestStorageServerFlagsDefaultToTheArtifactServerDefaults(t *testing.T) {
	g := NewWithT(t)
	o, err := parseStorage(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.ReadHeaderTimeout).To(Equal(artifact.DefaultReadHeaderTimeout))
	g.Expect(o.ReadTimeout).To(Equal(artifact.DefaultReadTimeout))
	g.Expect(o.WriteTimeout).To(Equal(artifact.DefaultWriteTimeout))
	g.Expect(o.IdleTimeout).To(Equal(artifact.DefaultIdleTimeout))
	g.Expect(o.MaxConnections).To(Equal(artifact.DefaultMaxConnections))
	g.Expect(o.ServerOptions()).To(HaveLen(5))

	o, err = parseStorage(t, "--storage-read-header-timeout=1s", "--storage-read-timeout=2s",
		"--storage-write-timeout=3m", "--storage-idle-timeout=4s", "--storage-max-connections=5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.ReadHeaderTimeout).To(Equal(time.Second))
	g.Expect(o.ReadTimeout).To(Equal(2 * time.Second))
	g.Expect(o.WriteTimeout).To(Equal(3 * time.Minute))
	g.Expect(o.IdleTimeout).To(Equal(4 * time.Second))
	g.Expect(o.MaxConnections).To(Equal(5))
}

func TestStorageRefusesAServerWithoutBounds(t *testing.T) {
	for flag, msg := range map[string]string{
		"--storage-read-header-timeout=0": "--storage-read-header-timeout must be positive",
		"--storage-read-timeout=0":        "--storage-read-timeout must be positive",
		"--storage-write-timeout=-1s":     "--storage-write-timeout must be positive",
		"--storage-idle-timeout=0":        "--storage-idle-timeout must be positive",
		"--storage-max-connections=0":     "--storage-max-connections must be at least 1",
	} {
		t.Run(flag, func(t *testing.T) {
			_, err := parseStorage(t, flag)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(msg)))
		})
	}
}

func TestLeaderElectionIsOnByDefaultAndCanBeTurnedOff(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) Manager {
		var o Manager
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return o
	}
	o := parse()
	g.Expect(o.LeaderElection.Enable).To(BeTrue())
	g.Expect(o.LeaderElection.ReleaseOnCancel).To(BeTrue())
	g.Expect(o.LeaderElection.LeaseDuration).To(Equal(35 * time.Second))
	g.Expect(parse("--enable-leader-election=false").LeaderElection.Enable).To(BeFalse())
	g.Expect(parse("--enable-leader-election").LeaderElection.Enable).To(BeTrue())
}
