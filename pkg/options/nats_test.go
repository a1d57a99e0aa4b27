package options

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

func parseNATS(t *testing.T, args ...string) (NATS, error) {
	t.Helper()
	var o NATS
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o, o.Validate()
}

// secretFile writes content to a file in a fresh folder, as a mounted
// Secret key would be.
func secretFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNATSAuthFlagsReadEverySecretFromAFile(t *testing.T) {
	g := NewWithT(t)
	password := secretFile(t, "password", "s3cret\n")
	ca := secretFile(t, "ca.crt", "")
	cert := secretFile(t, "tls.crt", "")
	key := secretFile(t, "tls.key", "")
	o, err := parseNATS(t, "--nats-url=tls://nats:4222", "--nats-user=publisher", "--nats-password-file="+password,
		"--nats-ca-file="+ca, "--nats-cert-file="+cert, "--nats-key-file="+key, "--nats-inbox-prefix=_INBOX.publisher")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Auth).To(Equal(NATSAuth{User: "publisher", PasswordFile: password, CAFile: ca, CertFile: cert, KeyFile: key, InboxPrefix: "_INBOX.publisher"}))
	g.Expect(o.Auth.Enabled()).To(BeTrue())
	got, err := readSecret(password)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("s3cret"), "the line end a file usually has is not part of the password")

	o, err = parseNATS(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Auth.Enabled()).To(BeFalse())
	g.Expect(o.Auth.InboxPrefix).To(Equal(DefaultInboxPrefix))
	opts, err := o.Auth.ConnectOptions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts).To(BeEmpty(), "no flags, no options: a plain connection as before")
}

func TestNATSAuthAcceptsAnNKeySeedAndACredsFile(t *testing.T) {
	g := NewWithT(t)
	user, err := nkeys.CreateUser()
	g.Expect(err).NotTo(HaveOccurred())
	seed, err := user.Seed()
	g.Expect(err).NotTo(HaveOccurred())
	o, err := parseNATS(t, "--nats-nkey-file="+secretFile(t, "user.nk", string(seed)))
	g.Expect(err).NotTo(HaveOccurred())
	opts, err := o.Auth.ConnectOptions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts).To(HaveLen(1))

	creds := "-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "\n------END USER NKEY SEED------\n"
	_, err = parseNATS(t, "--nats-creds-file="+secretFile(t, "user.creds", creds))
	g.Expect(err).NotTo(HaveOccurred())
}

func TestNATSAuthRefusesOptionsThatCannotWork(t *testing.T) {
	password := secretFile(t, "password", "x")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"two ways to authenticate":        {[]string{"--nats-user=a", "--nats-password-file=" + password, "--nats-token-file=" + password}, "not --nats-user and --nats-token-file"},
		"a user without a password":       {[]string{"--nats-user=a"}, "--nats-user and --nats-password-file go together"},
		"a certificate without a key":     {[]string{"--nats-cert-file=" + password}, "--nats-cert-file and --nats-key-file go together"},
		"a missing file":                  {[]string{"--nats-ca-file=/nonexistent/ca.crt"}, "--nats-ca-file: stat /nonexistent/ca.crt"},
		"a file that is not a creds file": {[]string{"--nats-creds-file=" + password}, "holds no user NKey seed"},
		"an inbox prefix with a wildcard": {[]string{"--nats-inbox-prefix=_INBOX.*"}, "must be a subject without wildcards"},
		"credentials twice":               {[]string{"--nats-url=nats://u:p@nats:4222", "--nats-token-file=" + password}, "--nats-url carries credentials"},
		"credentials twice in a cluster":  {[]string{"--nats-url=nats://nats-0:4222, nats://u:p@nats-1:4222", "--nats-token-file=" + password}, "--nats-url carries credentials"},
		"six stream replicas":             {[]string{"--nats-stream-replicas=6"}, "--nats-stream-replicas must be between 1 and 5, got 6"},
		"negative stream replicas":        {[]string{"--nats-stream-replicas=-1"}, "--nats-stream-replicas must be between 1 and 5, got -1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseNATS(t, tc.args...)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	// Without a URL nothing connects, so nothing is checked.
	_, err := parseNATS(t, "--nats-url=", "--nats-user=a")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

// TestNATSStreamReplicasDefaultToOne: one copy unless a cluster is
// configured (deploy/components/nats-cluster sets three).
func TestNATSStreamReplicasDefaultToOne(t *testing.T) {
	g := NewWithT(t)
	o, err := parseNATS(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.StreamReplicas).To(Equal(1))
	o, err = parseNATS(t, "--nats-url=nats://nats-0.nats:4222,nats://nats-1.nats:4222,nats://nats-2.nats:4222", "--nats-stream-replicas=3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.StreamReplicas).To(Equal(3))
}
