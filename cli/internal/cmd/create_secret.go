package cmd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
)

// The Secret keys the controllers read. source-controller: username,
// password, bearerToken, ca.crt, identity, known_hosts (Git), tls.crt,
// tls.key (Helm and OCI TLS), accesskey, secretkey (Bucket);
// notification-controller: token, email, audience (Receiver).
const (
	keyUsername    = "username"
	keyPassword    = "password"
	keyBearerToken = "bearerToken"
	keyCA          = "ca.crt"
	keyCert        = "tls.crt"
	keyKey         = "tls.key"
	keyIdentity    = "identity"
	keyIdentityPub = "identity.pub"
	keyKnownHosts  = "known_hosts"
	keyAccessKey   = "accesskey"
	keySecretKey   = "secretkey"
	keyToken       = "token"
	keyEmail       = "email"
	keyAudience    = "audience"
)

// minReceiverToken is notification-controller's shortest accepted token
// (receiver.MinTokenBytes): a shorter one is dropped and the Receiver
// never answers.
const minReceiverToken = 32

func newCreateSecretCmd(o *createOpts) *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Create or update a Secret with the keys a source or Receiver reads",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			o.intervalSet = cmd.Flags().Changed("interval")
			return o.noInterval("Secret")
		},
	}
	c.AddCommand(newCreateSecretGitCmd(o), newCreateSecretHelmCmd(o), newCreateSecretOCICmd(o), newCreateSecretTLSCmd(o), newCreateSecretReceiverCmd(o))
	return c
}

// newSecret is an Opaque Secret of t with data.
func newSecret(t target, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: t.namespace, Labels: t.labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

func newCreateSecretGitCmd(o *createOpts) *cobra.Command {
	var a gitAuth
	var rawURL string
	c := o.leaf("git", "Create or update a Secret for a GitRepository (basic auth, bearer token or SSH)",
		"  plumb create secret git podinfo-auth --url=https://github.com/stefanprodan/podinfo --username=u --password=p\n"+
			"  plumb create secret git podinfo-auth --url=ssh://git@github.com/stefanprodan/podinfo --known-hosts-file=./known_hosts\n"+
			"  plumb create secret git podinfo-auth --url=ssh://git@github.com/stefanprodan/podinfo --known-hosts-file=./known_hosts --private-key-file=./id_ecdsa",
		func(t target) (built, error) {
			if rawURL == "" {
				return built{}, errRequired("url")
			}
			data, pub, err := a.data(rawURL, true)
			if err != nil {
				return built{}, err
			}
			if pub != "" {
				fmt.Fprintf(o.g.errOut, "◎ deploy key: %s", pub)
			}
			return built{objs: []client.Object{newSecret(t, data)}}, nil
		})
	f := c.Flags()
	f.StringVar(&rawURL, "url", "", "Git address, e.g. ssh://git@host/org/repository (decides which keys the Secret gets).")
	a.bind(c, "ca-crt-file")
	f.StringVar(&a.bearerToken, "bearer-token", "", "Bearer token for Git over HTTP/S (instead of --username and --password).")
	return c
}

func newCreateSecretHelmCmd(o *createOpts) *cobra.Command {
	var tls tlsFiles
	var username, password string
	c := o.leaf("helm", "Create or update a Secret for a HelmRepository (basic auth and TLS)",
		"  plumb create secret helm repo-auth --username=u --password=p\n"+
			"  plumb create secret helm repo-auth --tls-crt-file=./cert.crt --tls-key-file=./key.crt --ca-crt-file=./ca.crt",
		func(t target) (built, error) {
			data, err := tls.data()
			if err != nil {
				return built{}, err
			}
			if (username == "") != (password == "") {
				return built{}, fmt.Errorf("--username and --password go together")
			}
			if username != "" {
				data[keyUsername], data[keyPassword] = []byte(username), []byte(password)
			}
			if len(data) == 0 {
				return built{}, fmt.Errorf("give --username and --password, or TLS files (--tls-crt-file, --tls-key-file, --ca-crt-file)")
			}
			return built{objs: []client.Object{newSecret(t, data)}}, nil
		})
	c.Flags().StringVarP(&username, "username", "u", "", "Basic authentication username.")
	c.Flags().StringVarP(&password, "password", "p", "", "Basic authentication password.")
	tls.bind(c, "tls-crt-file", "tls-key-file", "ca-crt-file")
	return c
}

func newCreateSecretTLSCmd(o *createOpts) *cobra.Command {
	var tls tlsFiles
	c := o.leaf("tls", "Create or update a Secret with TLS client certificate and CA (tls.crt, tls.key, ca.crt)",
		"  plumb create secret tls certs --tls-crt-file=./cert.crt --tls-key-file=./key.crt --ca-crt-file=./ca.crt",
		func(t target) (built, error) {
			data, err := tls.data()
			if err != nil {
				return built{}, err
			}
			if len(data) == 0 {
				return built{}, fmt.Errorf("give --tls-crt-file and --tls-key-file, --ca-crt-file, or both")
			}
			return built{objs: []client.Object{newSecret(t, data)}}, nil
		})
	tls.bind(c, "tls-crt-file", "tls-key-file", "ca-crt-file")
	return c
}

func newCreateSecretOCICmd(o *createOpts) *cobra.Command {
	var rawURL, username, password string
	c := o.leaf("oci", "Create or update a kubernetes.io/dockerconfigjson Secret for an OCI registry",
		"  plumb create secret oci ghcr-auth --url=ghcr.io --username=u --password=p",
		func(t target) (built, error) {
			switch {
			case rawURL == "":
				return built{}, errRequired("url")
			case username == "":
				return built{}, errRequired("username")
			case password == "":
				return built{}, errRequired("password")
			}
			s, err := dockerConfigSecret(t, rawURL, username, password)
			if err != nil {
				return built{}, err
			}
			return built{objs: []client.Object{s}}, nil
		})
	c.Flags().StringVar(&rawURL, "url", "", "Registry address, e.g. ghcr.io or ghcr.io/org/charts (only the host is used).")
	c.Flags().StringVarP(&username, "username", "u", "", "Registry username.")
	c.Flags().StringVarP(&password, "password", "p", "", "Registry password or token.")
	return c
}

// dockerConfigSecret is a kubernetes.io/dockerconfigjson Secret with one
// registry: what source-controller reads for an OCIRepository's
// secretRef.
func dockerConfigSecret(t target, rawURL, username, password string) (*corev1.Secret, error) {
	host := strings.TrimPrefix(rawURL, "oci://")
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if host == "" || strings.ContainsAny(host, " \t@") {
		return nil, fmt.Errorf("--url %q: no registry host in it", rawURL)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"username": username, "password": password, "auth": auth},
	}})
	if err != nil {
		return nil, err
	}
	s := newSecret(t, map[string][]byte{corev1.DockerConfigJsonKey: cfg})
	s.Type = corev1.SecretTypeDockerConfigJson
	return s, nil
}

func newCreateSecretReceiverCmd(o *createOpts) *cobra.Command {
	var typ, token, hostname, email, audience string
	c := o.leaf("receiver", "Create or update a Receiver's Secret (token, generated when not given)",
		"  plumb create secret receiver github-hook --type=github --hostname=plumb.example.com\n"+
			"  plumb create secret receiver gcr-hook --type=gcr --hostname=plumb.example.com --email-claim=sa@project.iam.gserviceaccount.com",
		func(t target) (built, error) {
			switch {
			case typ == "":
				return built{}, errRequired("type")
			case hostname == "":
				return built{}, errRequired("hostname")
			}
			if err := oneOf("type", typ, receiverTypes); err != nil {
				return built{}, err
			}
			if typ == notificationv1.GenericOIDCReceiver {
				return built{}, fmt.Errorf("a generic-oidc Receiver authenticates calls by their ID token and has no Secret")
			}
			if typ == notificationv1.GCRReceiver && email == "" {
				return built{}, fmt.Errorf("--email-claim is required for a gcr receiver")
			}
			if token == "" {
				b := make([]byte, minReceiverToken)
				if _, err := rand.Read(b); err != nil {
					return built{}, err
				}
				token = hex.EncodeToString(b)
			} else if len(token) < minReceiverToken {
				return built{}, fmt.Errorf("--token is %d bytes: notification-controller needs at least %d", len(token), minReceiverToken)
			}
			hookURL := "https://" + hostname + webhookPath(token, t.name, t.namespace)
			data := map[string][]byte{keyToken: []byte(token)}
			if typ == notificationv1.GCRReceiver {
				if audience == "" {
					audience = hookURL
				}
				data[keyEmail], data[keyAudience] = []byte(email), []byte(audience)
			}
			// On stderr, so that --export's stdout stays YAML alone.
			fmt.Fprintf(o.g.errOut, "◎ webhook URL: %s\n", hookURL)
			return built{objs: []client.Object{newSecret(t, data)}}, nil
		})
	f := c.Flags()
	f.StringVar(&typ, "type", "", "Receiver type: "+strings.Join(receiverTypes, ", ")+".")
	f.StringVar(&token, "token", "", "Webhook token (at least 32 bytes); generated when not given.")
	f.StringVar(&hostname, "hostname", "", "Host of the webhook URL printed, e.g. plumb.example.com.")
	f.StringVar(&email, "email-claim", "", "Service account email the ID tokens must carry (gcr, required).")
	f.StringVar(&audience, "audience-claim", "", "Audience the ID tokens must carry (gcr); defaults to the webhook URL.")
	return c
}

// webhookPath is the path notification-controller serves a Receiver on
// (its receiver.WebhookPath, status.webhookPath): /hook/ and the hex
// SHA-256 of token, name and namespace.
func webhookPath(token, name, namespace string) string {
	sum := sha256.Sum256([]byte(token + name + namespace))
	return "/hook/" + hex.EncodeToString(sum[:])
}

// tlsFiles are a client certificate, its key and a CA, as files.
type tlsFiles struct{ cert, key, ca string }

func (f *tlsFiles) bind(c *cobra.Command, cert, key, ca string) {
	c.Flags().StringVar(&f.cert, cert, "", "TLS client certificate file (PEM), stored as tls.crt.")
	c.Flags().StringVar(&f.key, key, "", "TLS client key file (PEM), stored as tls.key.")
	c.Flags().StringVar(&f.ca, ca, "", "CA certificate file (PEM), stored as ca.crt.")
}

// data reads the files given; a certificate without its key, or a key
// without its certificate, is refused.
func (f *tlsFiles) data() (map[string][]byte, error) {
	data := map[string][]byte{}
	if (f.cert == "") != (f.key == "") {
		return nil, fmt.Errorf("a TLS client certificate and its key go together: give both files or neither")
	}
	for _, in := range []struct{ flag, path, key string }{
		{"tls-crt-file", f.cert, keyCert}, {"tls-key-file", f.key, keyKey}, {"ca-crt-file", f.ca, keyCA},
	} {
		if in.path == "" {
			continue
		}
		b, err := readInput(in.flag, in.path)
		if err != nil {
			return nil, err
		}
		data[in.key] = b
	}
	return data, nil
}

// gitURL parses a Git address and checks its scheme, as Flux does.
func gitURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--url: %w", err)
	}
	switch u.Scheme {
	case "ssh", "http", "https":
	default:
		return nil, fmt.Errorf("--url: Git URL scheme %q is not supported: use ssh, http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("--url %q has no host", raw)
	}
	return u, nil
}
