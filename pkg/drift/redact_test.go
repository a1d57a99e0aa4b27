package drift

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/diff"
)

// secretReader serves Secrets by name; a name in fail answers with that
// error.
type secretReader struct {
	secrets map[string]*corev1.Secret
	fail    map[string]error
	reads   []string
}

func (r *secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads = append(r.reads, key.String())
	if err := r.fail[key.Name]; err != nil {
		return err
	}
	s, ok := r.secrets[key.Name]
	if !ok || key.Namespace != "apps" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r *secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

var rendered = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func kustomizationWith(refs ...kustomizev1.SubstituteReference) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}
	if refs != nil {
		ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: refs}
	}
	ks.Status.RenderedArtifact = &meta.Artifact{LastUpdateTime: metav1.NewTime(rendered)}
	return ks
}

func secret(name string, written time.Time, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "apps", CreationTimestamp: metav1.NewTime(written.Add(-time.Hour)),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{Time: written}}},
	}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

var drift = []diff.Change{
	{Path: "data.dsn", Before: `"x"`, After: `"postgres://app:pa55word@db"`},
	{Path: "spec.replicas", Before: "3", After: "1"},
}

func TestSecretRedactorHidesTheValuesOfSubstituteFromSecrets(t *testing.T) {
	g := NewWithT(t)
	r := &secretReader{secrets: map[string]*corev1.Secret{
		"creds":    secret("creds", rendered.Add(-time.Minute), map[string]string{"password": "pa55word"}),
		"settings": secret("settings", rendered.Add(-time.Minute), map[string]string{"replicas": "1111"}),
	}}
	red, err := SecretRedactor(context.Background(), r, kustomizationWith(
		kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: "settings"},
		kustomizev1.SubstituteReference{Kind: "Secret", Name: "creds"},
		kustomizev1.SubstituteReference{Kind: "Secret", Name: "absent", Optional: true},
	))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.reads).To(Equal([]string{"apps/creds", "apps/absent"}), "ConfigMaps are not read")
	g.Expect(red.Changes(drift)).To(Equal([]diff.Change{
		{Path: "data.dsn", Before: diff.Redacted, After: diff.Redacted},
		{Path: "spec.replicas", Before: "3", After: "1"},
	}))
}

func TestSecretRedactorIsNilWithoutSecrets(t *testing.T) {
	g := NewWithT(t)
	r := &secretReader{}
	for _, ks := range []*kustomizev1.Kustomization{
		kustomizationWith(),
		kustomizationWith(kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: "settings"}),
	} {
		red, err := SecretRedactor(context.Background(), r, ks)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(red).To(BeNil())
	}
	g.Expect(r.reads).To(BeEmpty())
}

func TestSecretRedactorHidesEveryValueOfAKustomizationThatDecrypts(t *testing.T) {
	g := NewWithT(t)
	r := &secretReader{}
	ks := kustomizationWith()
	ks.Spec.Decryption = &kustomizev1.Decryption{Provider: kustomizev1.DecryptionProviderSOPS, SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	// A ConfigMap generated from an encrypted env file drifted.
	fromEnvFile := []diff.Change{{Path: "data.DB_PASSWORD", Before: `"tampered"`, After: `"correct-horse-battery"`}}
	red, err := SecretRedactor(context.Background(), r, ks)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(red.Changes(fromEnvFile)).To(Equal([]diff.Change{{Path: "data.DB_PASSWORD", Before: diff.Redacted, After: diff.Redacted}}))
	g.Expect(r.reads).To(BeEmpty(), "the keys are render-controller's to read")
}

func TestSecretRedactorHidesEverythingWhenItCannotKnow(t *testing.T) {
	ks := kustomizationWith(kustomizev1.SubstituteReference{Kind: "Secret", Name: "creds"})
	everything := []diff.Change{
		{Path: "data.dsn", Before: diff.Redacted, After: diff.Redacted},
		{Path: "spec.replicas", Before: diff.Redacted, After: diff.Redacted},
	}

	t.Run("the Secret cannot be read", func(t *testing.T) {
		g := NewWithT(t)
		r := &secretReader{fail: map[string]error{"creds": apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", errors.New("no"))}}
		red, err := SecretRedactor(context.Background(), r, ks)
		g.Expect(err).To(MatchError(ContainSubstring("reading Secret apps/creds")))
		g.Expect(red.Changes(drift)).To(Equal(everything))
	})

	t.Run("the Secret changed after the render", func(t *testing.T) {
		g := NewWithT(t)
		r := &secretReader{secrets: map[string]*corev1.Secret{
			"creds": secret("creds", rendered.Add(time.Second), map[string]string{"password": "rotated1"}),
		}}
		red, err := SecretRedactor(context.Background(), r, ks)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(red.Changes(drift)).To(Equal(everything))
	})

	t.Run("the Secret changed in the second of the render counts as older", func(t *testing.T) {
		g := NewWithT(t)
		r := &secretReader{secrets: map[string]*corev1.Secret{
			"creds": secret("creds", rendered, map[string]string{"password": "pa55word"}),
		}}
		red, err := SecretRedactor(context.Background(), r, ks)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(red.Changes(drift)[1]).To(Equal(drift[1]))
	})
}
