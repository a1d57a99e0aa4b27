package render

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/decrypt/decrypttest"
)

// plaintexts of the encrypted fixture, each looked for in the output and,
// raw and base64, on disk.
var plaintexts = []string{
	"manifest-staple-9",     // a Secret manifest with a sops block
	"correct-horse-battery", // a secretGenerator env file
	"json-staple-9",         // a configMapGenerator JSON file
	"binary-staple-9",       // a secretGenerator binary file, for OpenPGP
	"patch-staple-9",        // a patches[].path file
}

// encryptedSource writes a kustomization whose Secret manifest, generator
// inputs and patch are SOPS-encrypted, the TLS key for an OpenPGP key and
// the rest for an age identity.
func encryptedSource(t *testing.T, ageKey decrypttest.AgeKey, pgpKey decrypttest.PGPKey) string {
	t.Helper()
	work := t.TempDir()
	src := mkSource(t, work)
	toAge := decrypttest.Recipients{Age: []decrypttest.AgeKey{ageKey}}
	files := map[string][]byte{
		"kustomization.yaml": []byte(`resources: [secret.yaml, deploy.yaml]
generatorOptions: {disableNameSuffixHash: true}
secretGenerator:
- name: db
  namespace: apps
  envs: [db.env]
- name: tls
  namespace: apps
  files: [tls.key=tls.key.enc]
configMapGenerator:
- name: settings
  namespace: apps
  files: [settings.json]
patches:
- path: patch.yaml
`),
		"deploy.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`),
		"secret.yaml": decrypttest.Encrypt(t, "secret.yaml", []byte(`apiVersion: v1
kind: Secret
metadata: {name: manifest, namespace: apps}
stringData:
  password: manifest-staple-9
`), toAge, decrypttest.Options{EncryptedRegex: "^(data|stringData)$"}),
		"db.env":        decrypttest.Encrypt(t, "db.env", []byte("DB_USER=app\nDB_PASSWORD=correct-horse-battery\n"), toAge, decrypttest.Options{}),
		"settings.json": decrypttest.Encrypt(t, "settings.json", []byte(`{"token": "json-staple-9"}`), toAge, decrypttest.Options{}),
		"tls.key.enc": decrypttest.Encrypt(t, "tls.key", []byte("-----BEGIN KEY-----\nbinary-staple-9\n-----END KEY-----\n"),
			decrypttest.Recipients{PGP: []decrypttest.PGPKey{pgpKey}}, decrypttest.Options{}),
		"patch.yaml": decrypttest.Encrypt(t, "patch.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  template:
    spec:
      containers:
      - name: web
        env: [{name: API_KEY, value: patch-staple-9}]
`), toAge, decrypttest.Options{}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

func decryptor(t *testing.T, data map[string]string) *decrypt.Decryptor {
	t.Helper()
	secret := map[string][]byte{}
	for k, v := range data {
		secret[k] = []byte(v)
	}
	keys, err := decrypt.ParseKeys("apps/sops-keys", secret)
	if err != nil {
		t.Fatal(err)
	}
	return decrypt.New(keys)
}

func TestEncryptedFilesAreDecryptedInMemoryOnly(t *testing.T) {
	ageKey, pgpKey := decrypttest.NewAgeKey(t), decrypttest.NewPGPKey(t, "ops")
	work := encryptedSource(t, ageKey, pgpKey)
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{
		Decryptor: decryptor(t, map[string]string{"age.agekey": ageKey.Identity, "ops.asc": pgpKey.Private}),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Manifests)
	readable := withSecretData(t, res.Manifests)
	for _, p := range plaintexts {
		if !strings.Contains(readable, p) {
			t.Errorf("the rendered manifests lack %q:\n%s", p, readable)
		}
	}
	for _, gone := range []string{"sops:", "ENC[", "sops_mac"} {
		if strings.Contains(out, gone) {
			t.Errorf("the rendered manifests still hold %q:\n%s", gone, out)
		}
	}
	// Nothing decrypted was written: every file below the work folder is
	// as the test wrote it, or gone.
	err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range plaintexts {
			if strings.Contains(string(data), s) || containsBase64Of(string(data), s) {
				t.Errorf("%s holds the plaintext %q", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withSecretData returns the manifests followed by every Secret's data
// decoded.
func withSecretData(t *testing.T, manifests []byte) string {
	t.Helper()
	nodes, err := kio.FromBytes(manifests)
	if err != nil {
		t.Fatal(err)
	}
	out := string(manifests)
	for _, n := range nodes {
		if n.GetKind() != "Secret" {
			continue
		}
		for k, v := range n.GetDataMap() {
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), ""))
			if err != nil {
				t.Fatalf("Secret %s key %s: %v", n.GetName(), k, err)
			}
			out += "\n" + k + ": " + string(b)
		}
	}
	return out
}

// containsBase64Of reports whether text holds the base64 of any line
// context around s: a generated Secret's data is the base64 of a whole file.
func containsBase64Of(text, s string) bool {
	for _, field := range strings.Fields(text) {
		b, err := base64.StdEncoding.DecodeString(field)
		if err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

func TestFilesForOtherKeysFailWithDecryptionFailed(t *testing.T) {
	ageKey, pgpKey := decrypttest.NewAgeKey(t), decrypttest.NewPGPKey(t, "ops")
	other := decrypttest.NewAgeKey(t)
	work := encryptedSource(t, ageKey, pgpKey)
	_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{
		Decryptor: decryptor(t, map[string]string{"other.agekey": other.Identity}),
	})
	var e *Error
	if !errors.As(err, &e) || e.Reason != kustomizev1.DecryptionFailedReason {
		t.Fatalf("err = %v, want reason %s", err, kustomizev1.DecryptionFailedReason)
	}
	msg := err.Error()
	if !strings.Contains(msg, "apps/sops-keys") || !strings.Contains(msg, ageKey.Recipient) {
		t.Errorf("the message names neither the Secret nor the wanted recipient: %s", msg)
	}
	if strings.Contains(msg, work) {
		t.Errorf("the message names the work folder: %s", msg)
	}
}

func TestWithoutDecryptionEncryptedFilesStayEncrypted(t *testing.T) {
	work := t.TempDir()
	src := mkSource(t, work)
	key := decrypttest.NewAgeKey(t)
	enc := decrypttest.Encrypt(t, "secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: manifest-staple-9}\n"),
		decrypttest.Recipients{Age: []decrypttest.AgeKey{key}}, decrypttest.Options{EncryptedRegex: "^(data|stringData)$"})
	if err := os.WriteFile(filepath.Join(src, "secret.yaml"), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Manifests); strings.Contains(out, "manifest-staple-9") || !strings.Contains(out, "ENC[") {
		t.Fatalf("without spec.decryption the Secret is decrypted:\n%s", out)
	}
}

func TestDecryptedValuesNeverAppearInBuildErrors(t *testing.T) {
	key := decrypttest.NewAgeKey(t)
	work := t.TempDir()
	src := mkSource(t, work)
	// The decrypted patch names an object that is not there: kustomize's
	// error quotes the patch.
	patch := decrypttest.Encrypt(t, "patch.yaml", []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: missing-staple-9}
data: {token: patch-staple-9}
`), decrypttest.Recipients{Age: []decrypttest.AgeKey{key}}, decrypttest.Options{})
	for name, data := range map[string][]byte{
		"kustomization.yaml": []byte("resources: [cm.yaml]\npatches:\n- path: patch.yaml\n"),
		"cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: present}\n"),
		"patch.yaml":         patch,
	} {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{
		Decryptor: decryptor(t, map[string]string{"k.agekey": key.Identity}),
	})
	if err == nil {
		t.Fatal("a patch of a missing object built")
	}
	msg := err.Error()
	if strings.Contains(msg, "missing-staple-9") || strings.Contains(msg, "patch-staple-9") {
		t.Fatalf("the error shows decrypted values: %s", msg)
	}
	if !strings.Contains(msg, "<redacted>") {
		t.Fatalf("the error does not quote the patch, so the test shows nothing: %s", msg)
	}
}
