package decrypt_test

import (
	"encoding/base64"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/decrypt/decrypttest"
)

// fixtures are plaintext files of each format SOPS knows, with a value the
// test looks for after decryption.
var fixtures = []struct {
	name, plain, secret string
}{
	{"db.env", "DB_USER=app\nDB_PASSWORD=correct-horse-battery\n", "correct-horse-battery"},
	{"config.yaml", "database:\n  password: yaml-staple-9\n", "yaml-staple-9"},
	{"config.json", `{"database": {"password": "json-staple-9"}}`, "json-staple-9"},
	{"config.ini", "[database]\npassword = ini-staple-9\n", "ini-staple-9"},
	{"id_rsa", "-----BEGIN KEY-----\nbinary-staple-9\n-----END KEY-----\n", "binary-staple-9"},
}

func TestFilesOfEveryFormatDecryptWithAgeAndOpenPGP(t *testing.T) {
	ageKey := decrypttest.NewAgeKey(t)
	pgpKey := decrypttest.NewPGPKey(t, "flux")
	for _, secret := range []struct {
		name string
		data map[string][]byte
		to   decrypttest.Recipients
	}{
		{"age", map[string][]byte{"identity.agekey": []byte(ageKey.Identity)}, decrypttest.Recipients{Age: []decrypttest.AgeKey{ageKey}}},
		{"openpgp", map[string][]byte{"flux.asc": []byte(pgpKey.Private)}, decrypttest.Recipients{PGP: []decrypttest.PGPKey{pgpKey}}},
	} {
		keys, err := decrypt.ParseKeys("apps/sops-keys", secret.data)
		if err != nil {
			t.Fatalf("%s: %v", secret.name, err)
		}
		for _, f := range fixtures {
			t.Run(secret.name+"/"+f.name, func(t *testing.T) {
				enc := decrypttest.Encrypt(t, f.name, []byte(f.plain), secret.to, decrypttest.Options{})
				if strings.Contains(string(enc), f.secret) {
					t.Fatalf("the fixture is not encrypted:\n%s", enc)
				}
				d := decrypt.New(keys)
				format := decrypt.FormatForPath(f.name)
				if strings.HasSuffix(f.name, ".env") {
					format = decrypt.EnvFormat(f.name)
				}
				out, ok, err := d.File(f.name, enc, format)
				if err != nil || !ok {
					t.Fatalf("File = %v, %v", ok, err)
				}
				if !strings.Contains(string(out), f.secret) {
					t.Fatalf("plaintext lacks %q:\n%s", f.secret, out)
				}
				if got := d.Redact("kustomize: bad line " + f.secret); strings.Contains(got, f.secret) {
					t.Fatalf("Redact kept the value: %s", got)
				}
			})
		}
	}
}

func TestAFileForAnotherKeyFailsNamingTheKeysItWants(t *testing.T) {
	mine, theirs := decrypttest.NewAgeKey(t), decrypttest.NewAgeKey(t)
	keys, err := decrypt.ParseKeys("apps/sops-keys", map[string][]byte{"mine.agekey": []byte(mine.Identity)})
	if err != nil {
		t.Fatal(err)
	}
	enc := decrypttest.Encrypt(t, "db.env", []byte("PASSWORD=for-someone-else\n"), decrypttest.Recipients{Age: []decrypttest.AgeKey{theirs}}, decrypttest.Options{})
	_, _, err = decrypt.New(keys).File("db.env", enc, decrypt.Dotenv)
	if err == nil {
		t.Fatal("decrypted with the wrong key")
	}
	for _, want := range []string{"db.env", "apps/sops-keys", theirs.Recipient} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestAPlainFileIsLeftAsItIs(t *testing.T) {
	keys, err := decrypt.ParseKeys("apps/k", map[string][]byte{"k.agekey": []byte(decrypttest.NewAgeKey(t).Identity)})
	if err != nil {
		t.Fatal(err)
	}
	in := []byte("PLAIN=yes\n")
	out, ok, err := decrypt.New(keys).File("plain.env", in, decrypt.Dotenv)
	if err != nil || ok || string(out) != string(in) {
		t.Fatalf("File = %q, %v, %v", out, ok, err)
	}
}

func TestObjectsDecryptAsFluxDecryptsThem(t *testing.T) {
	to, keys := ageSetup(t)
	manifest := decrypttest.Encrypt(t, "secret.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: apps
stringData:
  password: manifest-staple-9
`), to, decrypttest.Options{EncryptedRegex: "^(data|stringData)$"})
	envValue := decrypttest.EncryptEnv(t, []byte("TOKEN=value-staple-9\n"), to)
	generated := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: gen\ndata:\n  app.env: " +
		base64.StdEncoding.EncodeToString(envValue) + "\n  plain: " + base64.StdEncoding.EncodeToString([]byte("untouched")) + "\n"

	for _, tc := range []struct {
		name, in, want, wantGone string
	}{
		{"a Secret manifest with a sops block", string(manifest), "manifest-staple-9", "sops"},
		{"a Secret data value that is a SOPS file", generated, "value-staple-9", "sops_mac"},
		{"a ConfigMap without sops", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n", "name: c", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, err := kyaml.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			d := decrypt.New(keys)
			out, _, err := d.Object("Secret apps/db", node)
			if err != nil {
				t.Fatal(err)
			}
			text := out.MustString()
			if m := out.GetDataMap(); m != nil {
				for k, v := range m {
					b, _ := base64.StdEncoding.DecodeString(v)
					text += k + "=" + string(b) + "\n"
				}
			}
			if !strings.Contains(text, tc.want) {
				t.Fatalf("decrypted object lacks %q:\n%s", tc.want, text)
			}
			if tc.wantGone != "" && strings.Contains(text, tc.wantGone) {
				t.Fatalf("decrypted object still holds %q:\n%s", tc.wantGone, text)
			}
		})
	}
}

func TestBadDecryptionSecretsAreRefusedWithoutTheirValues(t *testing.T) {
	good := decrypttest.NewAgeKey(t)
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"no key", map[string][]byte{"token": []byte("x")}, "has no key ending in .agekey or .asc"},
		{"not an age key", map[string][]byte{"k.agekey": []byte("AGE-SECRET-KEY-1NOTAKEY")}, `key "k.agekey": not age identities`},
		{"not an OpenPGP key", map[string][]byte{"k.asc": []byte("hello")}, `key "k.asc": not an armored OpenPGP key`},
		{"a public key only", map[string][]byte{"k.asc": []byte(publicOnly(t))}, "is a public key"},
		{"a key locked by a passphrase", map[string][]byte{"k.asc": []byte(decrypttest.LockedPGPKey(t))}, "is protected by a passphrase"},
		{"one good, one bad", map[string][]byte{"a.agekey": []byte(good.Identity), "b.agekey": []byte("garbage")}, `key "b.agekey"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decrypt.ParseKeys("apps/k", tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "AGE-SECRET-KEY-1NOTAKEY") {
				t.Fatalf("error shows the value: %v", err)
			}
		})
	}
}

func publicOnly(t *testing.T) string {
	k := decrypttest.NewPGPKey(t, "pub")
	return k.Public
}
