package apivalidation

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A generic, generic-hmac or registry Receiver cannot tell one event type
// from another, so a filter on it would be silently ignored: the API server
// refuses it with a message saying why, and accepts the same filter on a
// type that can apply it.
func TestReceiverEventsOnlyWhereTheyFilter(t *testing.T) {
	ctx, ns := newNamespace(t)
	receiver := func(name, typ string) string {
		return `apiVersion: notification.plumb.dev/v1
kind: Receiver
metadata: {name: ` + name + `}
spec: {type: ` + typ + `, events: [push], secretRef: {name: token}, resources: [{kind: GitRepository, name: repo}]}`
	}
	for _, typ := range []string{"generic", "generic-hmac", "harbor", "dockerhub", "quay", "gcr", "nexus", "acr"} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			err := env.Client.Create(ctx, decode(t, receiver(typ, typ), ns))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("spec.events filters on the sender's event type, which only github, gitlab, bitbucket and cdevents receivers can tell"))
		})
	}
	for _, typ := range []string{"github", "gitlab", "bitbucket", "cdevents"} {
		t.Run(typ, func(t *testing.T) {
			NewWithT(t).Expect(env.Client.Create(ctx, decode(t, receiver(typ, typ), ns))).To(Succeed())
		})
	}
	t.Run("generic without events", func(t *testing.T) {
		manifest := `apiVersion: notification.plumb.dev/v1
kind: Receiver
metadata: {name: plain}
spec: {type: generic, secretRef: {name: token}, resources: [{kind: GitRepository, name: repo}]}`
		NewWithT(t).Expect(env.Client.Create(ctx, decode(t, manifest, ns))).To(Succeed())
	})
}
