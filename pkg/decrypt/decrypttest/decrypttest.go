// Package decrypttest makes SOPS-encrypted test fixtures with keys made in
// the test: age identities (filippo.io/age) and OpenPGP keys
// (ProtonMail/go-crypto), and files encrypted for them by the SOPS
// library's own encryption path (a tree, a data key given to each master
// key through a key service, Tree.Encrypt, the MAC, the store's emitter).
package decrypttest

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/pgp"
	sopsdotenv "github.com/getsops/sops/v3/stores/dotenv"
	sopsini "github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"

	"plumb.dev/pkg/decrypt"
)

// AgeKey is an age identity made for a test.
type AgeKey struct {
	// Identity is the private key, as a .agekey Secret value holds it.
	Identity string
	// Recipient is the public key.
	Recipient string
}

// NewAgeKey makes an age X25519 identity.
func NewAgeKey(t testing.TB) AgeKey {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return AgeKey{Identity: "# made by the test\n" + id.String() + "\n", Recipient: id.Recipient().String()}
}

// PGPKey is an OpenPGP key made for a test.
type PGPKey struct {
	// Private is the armored private key, as a .asc Secret value holds it.
	Private string
	// Public is the armored public key alone.
	Public string
	// Fingerprint is the primary key's, in upper-case hex as SOPS writes
	// it.
	Fingerprint string
	entity      *openpgp.Entity
}

// NewPGPKey makes an OpenPGP key without a passphrase.
func NewPGPKey(t testing.TB, name string) PGPKey {
	t.Helper()
	e, err := openpgp.NewEntity(name, "test", name+"@example.com", &packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA, DefaultHash: crypto.SHA256,
	})
	if err != nil {
		t.Fatal(err)
	}
	var private, public bytes.Buffer
	if err := armored(&private, openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivate(w, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := armored(&public, openpgp.PublicKeyType, e.Serialize); err != nil {
		t.Fatal(err)
	}
	return PGPKey{Private: private.String(), Public: public.String(), Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint), entity: e}
}

// Recipients are the keys a file is encrypted for.
type Recipients struct {
	Age []AgeKey
	PGP []PGPKey
}

// Options tune an encryption as sops's creation rules do. At most one of
// the suffixes and regexes may be set (SOPS refuses more).
type Options struct {
	// EncryptedRegex encrypts only the values whose key matches, e.g.
	// "^(data|stringData)$" for a Secret manifest.
	EncryptedRegex string
	// The other rules of which values are encrypted, as sops names them.
	UnencryptedSuffix, EncryptedSuffix, UnencryptedRegex string
	UnencryptedCommentRegex, EncryptedCommentRegex       string
	// MACOnlyEncrypted computes the MAC over the encrypted values only.
	MACOnlyEncrypted bool
	// Groups, when set, are the key groups instead of the one group of
	// the recipients, the data key split among them by Shamir's scheme so
	// that ShamirThreshold of them recover it.
	Groups          []Recipients
	ShamirThreshold int
}

// Encrypt encrypts plain, in the format name gives (decrypt.FormatForPath,
// or dotenv for env with a name SOPS calls binary), for the recipients.
func Encrypt(t testing.TB, name string, plain []byte, to Recipients, opts Options) []byte {
	t.Helper()
	out, err := encrypt(decrypt.FormatForPath(name), plain, to, opts)
	if err != nil {
		t.Fatalf("encrypting %s: %v", name, err)
	}
	return out
}

// EncryptEnv encrypts an env file as dotenv whatever its name.
func EncryptEnv(t testing.TB, plain []byte, to Recipients) []byte {
	t.Helper()
	out, err := encrypt(decrypt.Dotenv, plain, to, Options{})
	if err != nil {
		t.Fatalf("encrypting an env file: %v", err)
	}
	return out
}

func encrypt(f decrypt.Format, plain []byte, to Recipients, opts Options) ([]byte, error) {
	store := StoreFor(f)
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	groups := opts.Groups
	if groups == nil {
		groups = []Recipients{to}
	}
	var keyGroups []sops.KeyGroup
	entities := map[string]*openpgp.Entity{}
	for _, to := range groups {
		var group sops.KeyGroup
		for _, a := range to.Age {
			mk, err := sopsage.MasterKeyFromRecipient(a.Recipient)
			if err != nil {
				return nil, err
			}
			group = append(group, mk)
		}
		for _, p := range to.PGP {
			group = append(group, pgp.NewMasterKeyFromFingerprint(p.Fingerprint))
			entities[p.Fingerprint] = p.entity
		}
		keyGroups = append(keyGroups, group)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:               keyGroups,
		ShamirThreshold:         opts.ShamirThreshold,
		EncryptedRegex:          opts.EncryptedRegex,
		UnencryptedSuffix:       opts.UnencryptedSuffix,
		EncryptedSuffix:         opts.EncryptedSuffix,
		UnencryptedRegex:        opts.UnencryptedRegex,
		UnencryptedCommentRegex: opts.UnencryptedCommentRegex,
		EncryptedCommentRegex:   opts.EncryptedCommentRegex,
		MACOnlyEncrypted:        opts.MACOnlyEncrypted,
		Version:                 "3.13.3",
	}}
	if tree.Metadata.UnencryptedSuffix == "" && tree.Metadata.EncryptedSuffix == "" && tree.Metadata.UnencryptedRegex == "" &&
		tree.Metadata.EncryptedRegex == "" && tree.Metadata.UnencryptedCommentRegex == "" && tree.Metadata.EncryptedCommentRegex == "" {
		// sops's default rule, written into the file as sops writes it.
		tree.Metadata.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	svc := keyservice.NewCustomLocalClient(encryptServer{entities: entities})
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{svc})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%v", errs)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}

// StoreFor is the SOPS library's store for files of format f, with the
// settings render-controller's decryption matches (the library's
// defaults): the tests encrypt with it, and decrypt with it to compare.
func StoreFor(f decrypt.Format) sops.Store {
	switch f {
	case decrypt.YAML:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case decrypt.JSON:
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case decrypt.Dotenv:
		return sopsdotenv.NewStore(&config.DotenvStoreConfig{})
	case decrypt.INI:
		return sopsini.NewStore(&config.INIStoreConfig{})
	default:
		return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
}

// encryptServer encrypts data keys for age recipients and the OpenPGP
// keys made by the test, in memory.
type encryptServer struct {
	entities map[string]*openpgp.Entity
}

func (s encryptServer) Encrypt(_ context.Context, req *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	var b bytes.Buffer
	var err error
	switch k := req.GetKey(); {
	case k.GetAgeKey() != nil:
		err = sealAge(&b, k.GetAgeKey().Recipient, req.Plaintext)
	case k.GetPgpKey() != nil:
		e := s.entities[strings.ToUpper(k.GetPgpKey().Fingerprint)]
		if e == nil {
			return nil, fmt.Errorf("no test key %s", k.GetPgpKey().Fingerprint)
		}
		err = armored(&b, "PGP MESSAGE", func(w io.Writer) error {
			return seal(func() (io.WriteCloser, error) {
				return openpgp.Encrypt(w, []*openpgp.Entity{e}, nil, &openpgp.FileHints{IsBinary: true}, nil)
			}, req.Plaintext)
		})
	default:
		return nil, fmt.Errorf("unsupported key")
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.EncryptResponse{Ciphertext: b.Bytes()}, nil
}

// sealAge encrypts data for an age recipient, armored, as SOPS writes it.
func sealAge(b *bytes.Buffer, recipient string, data []byte) error {
	r, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return err
	}
	aw := armor.NewWriter(b)
	if err := seal(func() (io.WriteCloser, error) { return age.Encrypt(aw, r) }, data); err != nil {
		return err
	}
	return aw.Close()
}

// seal writes data through the writer open makes and closes it.
func seal(open func() (io.WriteCloser, error), data []byte) error {
	w, err := open()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

// armored writes what write writes in an OpenPGP armor block of kind.
func armored(b *bytes.Buffer, kind string, write func(io.Writer) error) error {
	w, err := pgparmor.Encode(b, kind, nil)
	if err != nil {
		return err
	}
	if err := write(w); err != nil {
		return err
	}
	return w.Close()
}

// LockedPGPKey is an armored OpenPGP private key protected by a
// passphrase, which a decryption Secret must not hold.
func LockedPGPKey(t testing.TB) string {
	t.Helper()
	e, err := openpgp.NewEntity("locked", "test", "locked@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte("passphrase"), nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := armored(&b, openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivateWithoutSigning(w, nil) }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func (encryptServer) Decrypt(context.Context, *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	return nil, fmt.Errorf("encryption only")
}
