package options

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/spf13/pflag"
)

// NATSAuth holds how a NATS client proves who it is and how it checks the
// server. Every secret is read from a file, so that a Kubernetes Secret
// mounted as a volume can be rotated without a restart: the credentials,
// password, token, CA bundle and client certificate are read again on
// every (re)connect. The flags are the NATS CLI's (--creds, --nkey,
// --user, --password, --token, --tlsca, --tlscert, --tlskey) prefixed with
// nats- and suffixed with -file where the value is a path, the way
// nats-server's own configuration names them (ca_file, cert_file,
// key_file).
//
// At most one way to authenticate may be given: a credentials file, an
// NKey seed, a user and password, or a token. TLS is used when a CA file
// or a client certificate is given, or when the URL is tls://.
type NATSAuth struct {
	// CredsFile is a NATS credentials file: a user JWT and its NKey seed,
	// as `nsc generate creds` writes it (decentralized, JWT authentication).
	CredsFile string
	// NKeyFile holds a user NKey seed (SU…).
	NKeyFile string
	// User is the user name; its password is read from PasswordFile.
	User         string
	PasswordFile string
	// TokenFile holds an authentication token.
	TokenFile string
	// CAFile is a PEM bundle of the CAs that sign the server's certificate;
	// the system's CAs are used when it is empty.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key (PEM),
	// for a server that verifies clients.
	CertFile, KeyFile string
	// InboxPrefix starts the subjects the client receives replies on
	// (JetStream acknowledgements, pulled events), so that the server can
	// allow each user to subscribe to its own replies only.
	InboxPrefix string
}

// DefaultInboxPrefix is nats.go's own reply-subject prefix.
const DefaultInboxPrefix = "_INBOX"

// BindFlags registers the NATS authentication and TLS flags on fs.
func (o *NATSAuth) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.CredsFile, "nats-creds-file", "",
		"A NATS credentials file (a user JWT and its NKey seed, as nsc writes it) to authenticate with.")
	fs.StringVar(&o.NKeyFile, "nats-nkey-file", "",
		"A file holding the NATS user NKey seed (SU...) to authenticate with.")
	fs.StringVar(&o.User, "nats-user", "",
		"The NATS user name to authenticate with; its password is read from --nats-password-file.")
	fs.StringVar(&o.PasswordFile, "nats-password-file", "",
		"A file holding the password of --nats-user.")
	fs.StringVar(&o.TokenFile, "nats-token-file", "",
		"A file holding the NATS authentication token.")
	fs.StringVar(&o.CAFile, "nats-ca-file", "",
		"A PEM file of the CAs that sign the NATS server's certificate; setting it turns TLS on.")
	fs.StringVar(&o.CertFile, "nats-cert-file", "",
		"The client certificate (PEM) presented to a NATS server that verifies clients; needs --nats-key-file.")
	fs.StringVar(&o.KeyFile, "nats-key-file", "",
		"The private key (PEM) of --nats-cert-file.")
	fs.StringVar(&o.InboxPrefix, "nats-inbox-prefix", DefaultInboxPrefix,
		"The subject prefix of the client's reply inboxes; a server can then allow each user its own replies only.")
}

// Validate reports options that cannot work: two ways to authenticate, a
// user without a password, a certificate without a key, or a file that
// cannot be read or does not hold what its flag says.
func (o *NATSAuth) Validate() error {
	var ways []string
	for _, w := range []struct {
		flag string
		set  bool
	}{
		{"--nats-creds-file", o.CredsFile != ""},
		{"--nats-nkey-file", o.NKeyFile != ""},
		{"--nats-user", o.User != "" || o.PasswordFile != ""},
		{"--nats-token-file", o.TokenFile != ""},
	} {
		if w.set {
			ways = append(ways, w.flag)
		}
	}
	if len(ways) > 1 {
		return fmt.Errorf("give one way to authenticate to NATS, not %s", strings.Join(ways, " and "))
	}
	if (o.User == "") != (o.PasswordFile == "") {
		return errors.New("--nats-user and --nats-password-file go together")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return errors.New("--nats-cert-file and --nats-key-file go together")
	}
	if p := o.InboxPrefix; p != "" && (strings.ContainsAny(p, "*> \t") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".")) {
		return fmt.Errorf("--nats-inbox-prefix %q must be a subject without wildcards, spaces or a leading or trailing dot", p)
	}
	files := []struct{ flag, path string }{
		{"--nats-creds-file", o.CredsFile},
		{"--nats-nkey-file", o.NKeyFile},
		{"--nats-password-file", o.PasswordFile},
		{"--nats-token-file", o.TokenFile},
		{"--nats-ca-file", o.CAFile},
		{"--nats-cert-file", o.CertFile},
		{"--nats-key-file", o.KeyFile},
	}
	for _, f := range files {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	if o.CredsFile != "" {
		data, err := os.ReadFile(o.CredsFile)
		if err != nil {
			return fmt.Errorf("--nats-creds-file: %w", err)
		}
		if _, err := nkeys.ParseDecoratedJWT(data); err != nil {
			return fmt.Errorf("--nats-creds-file %s holds no user JWT: %w", o.CredsFile, err)
		}
		if _, err := nkeys.ParseDecoratedUserNKey(data); err != nil {
			return fmt.Errorf("--nats-creds-file %s holds no user NKey seed: %w", o.CredsFile, err)
		}
	}
	return nil
}

// Enabled reports whether any authentication or TLS option is set.
func (o *NATSAuth) Enabled() bool {
	return o.CredsFile != "" || o.NKeyFile != "" || o.User != "" || o.PasswordFile != "" ||
		o.TokenFile != "" || o.CAFile != "" || o.CertFile != "" || o.KeyFile != ""
}

// ConnectOptions returns the nats.go options that authenticate as o says
// and check the server's certificate. Call Validate first: a file that
// cannot be read later makes the server refuse the connection, which the
// caller's error handlers report.
func (o *NATSAuth) ConnectOptions() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case o.CredsFile != "":
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	case o.NKeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey-file %s: %w", o.NKeyFile, err)
		}
		opts = append(opts, opt)
	case o.User != "":
		user, file := o.User, o.PasswordFile
		opts = append(opts, nats.UserInfoHandler(func() (string, string) {
			password, _ := readSecret(file)
			return user, password
		}))
	case o.TokenFile != "":
		file := o.TokenFile
		opts = append(opts, nats.TokenHandler(func() string {
			token, _ := readSecret(file)
			return token
		}))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if o.CertFile != "" {
		opts = append(opts, nats.ClientCert(o.CertFile, o.KeyFile))
	}
	if o.InboxPrefix != "" && o.InboxPrefix != DefaultInboxPrefix {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	return opts, nil
}

// readSecret reads a one-line secret from a file, without the line end a
// file written by hand usually has.
func readSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
