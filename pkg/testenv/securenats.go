package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"plumb.dev/pkg/options"
)

// NATS users of deploy/nats/accounts.conf, one per role.
const (
	// NATSPublisher is source-, render- and sync-controller's user.
	NATSPublisher = "publisher"
	// NATSNotification is notification-controller's user.
	NATSNotification = "notification"
	// NATSReader is the user of `plumb events`.
	NATSReader = "reader"
	// NATSAlerts is the nats alert provider's user, in an account of its
	// own.
	NATSAlerts = "alerts"
)

// NATSUsers lists the users of deploy/nats/accounts.conf.
var NATSUsers = []string{NATSPublisher, NATSNotification, NATSReader, NATSAlerts}

// SecureNATS is what a client of a NATS server started WithSecureNATS
// needs: a password per user and the TLS files, all in files, as a mounted
// Secret gives them.
type SecureNATS struct {
	// Passwords maps each user to its password.
	Passwords map[string]string
	// CAFile is the CA that signs the server's and the client's
	// certificates.
	CAFile string
	// CertFile and KeyFile are a client certificate the server accepts.
	CertFile, KeyFile string

	dir, accounts, serverCert, serverKey string
}

func newSecureNATS(root, dir string) (*SecureNATS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &SecureNATS{
		Passwords: map[string]string{},
		dir:       dir,
		accounts:  filepath.Join(root, "deploy", "nats", "accounts.conf"),
	}
	for _, u := range NATSUsers {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s.Passwords[u] = hex.EncodeToString(b)
		if err := os.WriteFile(s.passwordFile(u), []byte(s.Passwords[u]+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	if err := s.writeCertificates(); err != nil {
		return nil, fmt.Errorf("making the NATS test certificates: %w", err)
	}
	return s, nil
}

func (s *SecureNATS) passwordFile(user string) string {
	return filepath.Join(s.dir, user+".password")
}

// Auth returns the options that connect as user, with TLS and the client
// certificate, and the reply prefix accounts.conf allows that user.
func (s *SecureNATS) Auth(user string) options.NATSAuth {
	return options.NATSAuth{
		User:         user,
		PasswordFile: s.passwordFile(user),
		CAFile:       s.CAFile,
		CertFile:     s.CertFile,
		KeyFile:      s.KeyFile,
		InboxPrefix:  options.DefaultInboxPrefix + "." + user,
	}
}

// TLSOnly returns the options that speak TLS with the client certificate
// but give no user: what a controller without credentials sends.
func (s *SecureNATS) TLSOnly() options.NATSAuth {
	return options.NATSAuth{CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile}
}

// serverOptions writes the server's configuration: the passwords as
// variables, deploy/nats/accounts.conf as it is, and TLS that verifies
// clients; it then reads it the way nats-server does.
func (s *SecureNATS) serverOptions(storeDir string) (*natsserver.Options, error) {
	accounts, err := os.ReadFile(s.accounts)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, u := range NATSUsers {
		fmt.Fprintf(&b, "NATS_%s_PASSWORD: %q\n", strings.ToUpper(u), s.Passwords[u])
	}
	b.Write(accounts)
	fmt.Fprintf(&b, "\ntls: {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n", s.serverCert, s.serverKey, s.CAFile)
	conf := filepath.Join(s.dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	opts, err := natsserver.ProcessConfigFile(conf)
	if err != nil {
		return nil, fmt.Errorf("reading %s with deploy/nats/accounts.conf: %w", conf, err)
	}
	opts.Host = "127.0.0.1"
	opts.Port = natsserver.RANDOM_PORT
	opts.JetStream = true
	opts.StoreDir = storeDir
	opts.NoLog = true
	opts.NoSigs = true
	return opts, nil
}

// writeCertificates makes a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, and writes them as PEM files.
func (s *SecureNATS) writeCertificates() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "plumb test NATS CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	s.CAFile = filepath.Join(s.dir, "ca.crt")
	if err := writePEM(s.CAFile, "CERTIFICATE", caDER); err != nil {
		return err
	}
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certFile, keyFile string, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
			DNSNames:     dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		certFile, keyFile = filepath.Join(s.dir, name+".crt"), filepath.Join(s.dir, name+".key")
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return "", "", err
		}
		return certFile, keyFile, writePEM(keyFile, "EC PRIVATE KEY", keyDER)
	}
	if s.serverCert, s.serverKey, err = issue(2, "nats-server", x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}); err != nil {
		return err
	}
	s.CertFile, s.KeyFile, err = issue(3, "nats-client", x509.ExtKeyUsageClientAuth, nil, nil)
	return err
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
