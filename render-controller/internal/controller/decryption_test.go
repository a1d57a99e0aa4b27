package controller

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/kustomize/kyaml/kio"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/decrypt/decrypttest"
	"plumb.dev/pkg/events"
)

// sopsTree is a source whose Secret manifest (for an age key) and
// secretGenerator env file (for an OpenPGP key) are SOPS-encrypted.
func sopsTree(t *testing.T, ageKey decrypttest.AgeKey, pgpKey decrypttest.PGPKey) map[string]string {
	return map[string]string{
		"kustomization.yaml": "resources: [secret.yaml]\ngeneratorOptions: {disableNameSuffixHash: true}\nsecretGenerator:\n- name: db\n  envs: [db.env]\n",
		"secret.yaml": string(decrypttest.Encrypt(t, "secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: api}\nstringData: {token: api-staple-9}\n"),
			decrypttest.Recipients{Age: []decrypttest.AgeKey{ageKey}}, decrypttest.Options{EncryptedRegex: "^(data|stringData)$"})),
		"db.env": string(decrypttest.Encrypt(t, "db.env", []byte("DB_PASSWORD=correct-horse-battery\n"),
			decrypttest.Recipients{PGP: []decrypttest.PGPKey{pgpKey}}, decrypttest.Options{})),
	}
}

func keysSecret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

func TestSOPSSecretsRenderDecryptedAndBadKeysKeepTheLastRender(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ageKey, pgpKey := decrypttest.NewAgeKey(t), decrypttest.NewPGPKey(t, "ops")
	g.Expect(k8s.Create(ctx, keysSecret(ns, "sops-keys", map[string]string{
		"identity.agekey": ageKey.Identity, "ops.asc": pgpKey.Private,
	}))).To(Succeed())
	gitRepo(t, ns, "repo", nil)
	rev := strings.Repeat("5", 40)
	publishTree(t, ns, "repo", rev, sopsTree(t, ageKey, pgpKey))
	kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.Decryption = &kustomizev1.Decryption{Provider: kustomizev1.DecryptionProviderSOPS, SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	})

	// The artifact, which only sync-controller may fetch, holds the
	// decrypted Secrets (docs/design/sops.md).
	ks := waitRevision(t, ns, "app", "main@sha1:"+rev)
	body := download(t, ks.Status.RenderedArtifact)
	g.Expect(body).NotTo(ContainSubstring("ENC["))
	g.Expect(body).NotTo(ContainSubstring("sops"))
	g.Expect(body).To(ContainSubstring("token: api-staple-9"))
	g.Expect(secretData(t, body, "db")).To(HaveKeyWithValue("DB_PASSWORD", "correct-horse-battery"))
	noPlaintextOnDisk(t, workRoot, "api-staple-9", "correct-horse-battery")

	// Keys that do not fit: Rendered=False, DecryptionFailed, an event, and
	// the last good render still served.
	last := ks.Status.RenderedArtifact.DeepCopy()
	other := decrypttest.NewAgeKey(t)
	var secret corev1.Secret
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sops-keys"}, &secret)).To(Succeed())
	secret.Data = map[string][]byte{"identity.agekey": []byte(other.Identity)}
	g.Expect(k8s.Update(ctx, &secret)).To(Succeed())
	requestReconcile(t, ns, "app")
	ks = waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.DecryptionFailedReason)
	msg := renderedCondition(ks).Message
	g.Expect(msg).To(ContainSubstring("no key of Secret " + ns + "/sops-keys decrypts it"))
	g.Expect(msg).To(ContainSubstring("db.env"))
	g.Expect(msg).To(ContainSubstring(pgpKey.Fingerprint))
	g.Expect(ks.Status.RenderedArtifact).To(Equal(last))
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(Equal(body))
	g.Eventually(func(g Gomega) {
		evs := published.of(ns, "app", kustomizev1.DecryptionFailedReason)
		g.Expect(evs).NotTo(BeEmpty())
		g.Expect(evs[0].Severity).To(Equal(events.SeverityError))
	}, timeout, poll).Should(Succeed())
	for _, e := range published.all(ns, "app") {
		g.Expect(e.Message).NotTo(ContainSubstring("api-staple-9"))
		g.Expect(e.Message).NotTo(ContainSubstring("correct-horse-battery"))
	}
}

func TestDecryptionSecretsThatCannotBeUsedFailTheRender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"missing", nil, "decryption Secret %s/keys (spec.decryption.secretRef) not found"},
		{"no key", &corev1.Secret{StringData: map[string]string{"token": "x"}}, "Secret %s/keys has no key ending in .agekey or .asc"},
		{"not an age identity", &corev1.Secret{StringData: map[string]string{"a.agekey": "AGE-SECRET-KEY-1XYZ"}}, `Secret %s/keys key "a.agekey": not age identities`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			if tc.secret != nil {
				tc.secret.Namespace, tc.secret.Name = ns, "keys"
				g.Expect(k8s.Create(context.Background(), tc.secret)).To(Succeed())
			}
			gitRepo(t, ns, "repo", nil)
			publishTree(t, ns, "repo", strings.Repeat("6", 40), map[string]string{"cm.yaml": cm("settings", "a: b")})
			kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) {
				s.Decryption = &kustomizev1.Decryption{Provider: kustomizev1.DecryptionProviderSOPS, SecretRef: &meta.LocalObjectReference{Name: "keys"}}
			})
			ks := waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.DecryptionFailedReason)
			g.Expect(renderedCondition(ks).Message).To(ContainSubstring(strings.ReplaceAll(tc.want, "%s", ns)))
			g.Expect(renderedCondition(ks).Message).NotTo(ContainSubstring("XYZ"))
		})
	}
}

func TestTheCRDRefusesAnotherDecryptionProvider(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:  kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			Interval:   metav1.Duration{Duration: 3600e9},
			Decryption: &kustomizev1.Decryption{Provider: "vault"},
		},
	}
	err := k8s.Create(context.Background(), ks)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`spec.decryption.provider: Unsupported value: "vault"`))
}

// secretData decodes the data of the Secret name in a rendered artifact.
func secretData(t *testing.T, body, name string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes {
		if n.GetKind() != "Secret" || n.GetName() != name {
			continue
		}
		for k, v := range n.GetDataMap() {
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), ""))
			if err != nil {
				t.Fatal(err)
			}
			out[k] = string(b)
		}
	}
	return out
}

// noPlaintextOnDisk walks dir (where renders download and extract) and
// fails on any file holding one of the values, raw or base64.
func noPlaintextOnDisk(t *testing.T, dir string, values ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// Other tests' renders come and go meanwhile.
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, v := range values {
			if strings.Contains(string(data), v) || strings.Contains(string(data), base64.StdEncoding.EncodeToString([]byte(v))) {
				t.Errorf("%s holds %q", p, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
