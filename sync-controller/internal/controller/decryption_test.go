package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// A Kustomization that decrypts SOPS files may have plaintext in any field
// of any object; sync-controller cannot tell which, so its drift reports
// hide every value (docs/design/sops.md).
func TestDriftReportsOfAKustomizationThatDecryptsHideEveryValue(t *testing.T) {
	g := NewWithT(t)
	const password = "correct-horse-battery"
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Decryption = &kustomizev1.Decryption{Provider: kustomizev1.DecryptionProviderSOPS, SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	})
	subscription := subscribeEvents(t, ks)
	// What render-controller makes of a configMapGenerator over an
	// encrypted env file.
	render(t, ks, "main@sha1:d1", fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: db
  namespace: %s
data:
  DB_PASSWORD: %s
  DB_USER: app
`, ks.Namespace, password))
	waitReady(t, ks, "main@sha1:d1")

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "db"}, cm)).To(Succeed())
	cm.Data["DB_PASSWORD"] = "guessed-password"
	cm.Data["DB_USER"] = "root"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())

	g.Eventually(func(g Gomega) {
		for _, reason := range []string{kustomizev1.DriftDetectedReason, kustomizev1.DriftCorrectedReason} {
			got := subscription.withReason(reason)
			g.Expect(got).NotTo(BeEmpty(), reason)
			changes := got[len(got)-1].Changes
			g.Expect(changes).To(ConsistOf(HaveField("Path", "data.DB_PASSWORD"), HaveField("Path", "data.DB_USER")), reason)
			for _, c := range changes {
				g.Expect(c.Before).To(Equal(`"<redacted>"`), reason)
				g.Expect(c.After).To(Equal(`"<redacted>"`), reason)
			}
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	got := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(got.Status.Drift).NotTo(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	status, err := json.Marshal(got.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring(password))
	g.Expect(string(status)).NotTo(ContainSubstring("guessed-password"))
	for _, e := range subscription.all() {
		data, err := json.Marshal(e)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).NotTo(ContainSubstring(password), e.Reason)
	}
}
