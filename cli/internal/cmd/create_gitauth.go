package cmd

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
)

// maxRSABits bounds --ssh-rsa-bits: generating a larger key takes
// minutes, and no Git host asks for one.
const maxRSABits = 8192

// ecdsaCurves are the curves --ssh-ecdsa-curve names, as Flux spells them.
var ecdsaCurves = map[string]elliptic.Curve{"p256": elliptic.P256(), "p384": elliptic.P384(), "p521": elliptic.P521()}

// gitAuth is the credentials of a Git Secret, from the flags Flux's
// `create secret git` and `create source git` share.
//
// For an ssh:// URL plumb generates a key pair (or reads --private-key-file)
// but, unlike Flux, does not scan the server's host keys: a scan trusts
// whatever answers on the network at that moment, and source-controller
// refuses an unknown host. The host keys come from --known-hosts-file
// (e.g. `ssh-keyscan HOST > known_hosts`, checked against the host's
// published fingerprints).
type gitAuth struct {
	username, password, bearerToken string
	caFlag, caFile                  string
	privateKeyFile, knownHostsFile  string
	keyAlgorithm, ecdsaCurve        string
	rsaBits                         int
}

func (a *gitAuth) bind(c *cobra.Command, caFlag string) {
	f := c.Flags()
	a.caFlag = caFlag
	f.StringVarP(&a.username, "username", "u", "", "Basic authentication username (Git over HTTP/S).")
	f.StringVarP(&a.password, "password", "p", "", "Basic authentication password (HTTP/S), or the passphrase of --private-key-file (SSH).")
	f.StringVar(&a.caFile, caFlag, "", "CA certificate file (PEM) for a Git server over HTTPS with a private CA, stored as ca.crt.")
	f.StringVar(&a.privateKeyFile, "private-key-file", "", "SSH private key file; without it a key pair is generated and its public key printed as the deploy key.")
	f.StringVar(&a.knownHostsFile, "known-hosts-file", "", "The SSH server's host keys in known_hosts format (required for ssh:// URLs: plumb does not scan them).")
	f.StringVar(&a.keyAlgorithm, "ssh-key-algorithm", "ecdsa", "Algorithm of the generated SSH key: rsa, ecdsa or ed25519.")
	f.IntVar(&a.rsaBits, "ssh-rsa-bits", 2048, "Size of a generated RSA key, 1024 to 8192, a multiple of 8.")
	f.StringVar(&a.ecdsaCurve, "ssh-ecdsa-curve", "p384", "Curve of a generated ECDSA key: p256, p384 or p521.")
}

// given says whether any credential flag was set, so that `create source
// git` writes a Secret only when there is something to put in it.
func (a *gitAuth) given() bool {
	return a.username != "" || a.password != "" || a.bearerToken != "" || a.caFile != "" || a.privateKeyFile != "" || a.knownHostsFile != ""
}

// data is the Secret's data for rawURL, and for SSH the public key to
// give the Git host as a deploy key. HTTP/S credentials are required when
// requireCreds (a Secret for them alone); a public repository behind a
// private CA needs only the CA.
func (a *gitAuth) data(rawURL string, requireCreds bool) (map[string][]byte, string, error) {
	u, err := gitURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	if u.Scheme == "ssh" {
		return a.sshData(u.Hostname())
	}
	if a.privateKeyFile != "" || a.knownHostsFile != "" {
		return nil, "", fmt.Errorf("--private-key-file and --known-hosts-file are for ssh:// URLs, not %s://", u.Scheme)
	}
	data := map[string][]byte{}
	switch {
	case a.bearerToken != "" && (a.username != "" || a.password != ""):
		return nil, "", errors.New("give --username and --password, or --bearer-token, not both")
	case a.bearerToken != "":
		data[keyBearerToken] = []byte(a.bearerToken)
	case a.username != "" && a.password != "":
		data[keyUsername], data[keyPassword] = []byte(a.username), []byte(a.password)
	case a.username != "" || a.password != "":
		return nil, "", errors.New("--username and --password go together")
	case requireCreds:
		return nil, "", errors.New("for Git over HTTP/S give --username and --password, or --bearer-token")
	}
	if a.caFile != "" {
		ca, err := readInput(a.caFlag, a.caFile)
		if err != nil {
			return nil, "", err
		}
		data[keyCA] = ca
	}
	return data, "", nil
}

// sshData reads or generates the identity and reads the host keys.
func (a *gitAuth) sshData(host string) (map[string][]byte, string, error) {
	switch {
	case a.caFile != "":
		return nil, "", fmt.Errorf("--%s is for Git over HTTPS; over SSH the host is trusted by --known-hosts-file", a.caFlag)
	case a.username != "" || a.bearerToken != "":
		return nil, "", errors.New("--username and --bearer-token are for Git over HTTP/S; over SSH the user is the URL's")
	case a.knownHostsFile == "":
		return nil, "", fmt.Errorf("--known-hosts-file is required for an ssh:// URL: plumb does not scan host keys over the network; "+
			"run ssh-keyscan %s > known_hosts, check the keys against the host's published fingerprints and pass the file", host)
	}
	known, err := readInput("known-hosts-file", a.knownHostsFile)
	if err != nil {
		return nil, "", err
	}
	if err := checkKnownHosts(known); err != nil {
		return nil, "", err
	}
	var identity []byte
	var pub ssh.PublicKey
	if a.privateKeyFile != "" {
		identity, err = readInput("private-key-file", a.privateKeyFile)
		if err != nil {
			return nil, "", err
		}
		pub, err = publicKeyOf(identity, a.password)
	} else {
		if a.password != "" {
			return nil, "", errors.New("--password over SSH is the passphrase of --private-key-file; a generated key has none")
		}
		identity, pub, err = a.generateKey()
	}
	if err != nil {
		return nil, "", err
	}
	authorized := ssh.MarshalAuthorizedKey(pub)
	data := map[string][]byte{keyIdentity: identity, keyIdentityPub: authorized, keyKnownHosts: known}
	if a.password != "" {
		data[keyPassword] = []byte(a.password)
	}
	return data, string(authorized), nil
}

// checkKnownHosts refuses a file with no host key or a line that is not
// one.
func checkKnownHosts(data []byte) error {
	n := 0
	for rest := data; len(bytes.TrimSpace(rest)) > 0; n++ {
		var err error
		if _, _, _, _, rest, err = ssh.ParseKnownHosts(rest); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("--known-hosts-file: %w", err)
		}
	}
	if n == 0 {
		return errors.New("--known-hosts-file holds no host key")
	}
	return nil
}

// publicKeyOf reads a private key file, with its passphrase if any.
func publicKeyOf(pemData []byte, passphrase string) (ssh.PublicKey, error) {
	var key any
	var err error
	if passphrase != "" {
		key, err = ssh.ParseRawPrivateKeyWithPassphrase(pemData, []byte(passphrase))
	} else {
		key, err = ssh.ParseRawPrivateKey(pemData)
	}
	if err != nil {
		return nil, fmt.Errorf("--private-key-file: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		return nil, fmt.Errorf("--private-key-file: %w", err)
	}
	return signer.PublicKey(), nil
}

// generateKey makes a key pair of the algorithm the flags ask for.
func (a *gitAuth) generateKey() ([]byte, ssh.PublicKey, error) {
	var priv crypto.Signer
	var err error
	switch a.keyAlgorithm {
	case "rsa":
		if a.rsaBits < 1024 || a.rsaBits > maxRSABits || a.rsaBits%8 != 0 {
			return nil, nil, fmt.Errorf("--ssh-rsa-bits %d: want 1024 to %d, a multiple of 8", a.rsaBits, maxRSABits)
		}
		priv, err = rsa.GenerateKey(rand.Reader, a.rsaBits)
	case "ecdsa":
		curve, ok := ecdsaCurves[a.ecdsaCurve]
		if !ok {
			names := make([]string, 0, len(ecdsaCurves))
			for n := range ecdsaCurves {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, nil, fmt.Errorf("--ssh-ecdsa-curve %q: use one of %s", a.ecdsaCurve, strings.Join(names, ", "))
		}
		priv, err = ecdsa.GenerateKey(curve, rand.Reader)
	case "ed25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("--ssh-key-algorithm %q: use rsa, ecdsa or ed25519", a.keyAlgorithm)
	}
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, err
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(block), pub, nil
}
