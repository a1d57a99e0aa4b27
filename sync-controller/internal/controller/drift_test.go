package controller

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
)

func TestEventChangesAreBounded(t *testing.T) {
	g := NewWithT(t)
	g.Expect(eventChanges("Deployment/shop/web", []diff.Change{{Path: "spec.replicas", Before: "3", After: "1"}},
		map[string]string{"spec.replicas": "kubectl-edit"})).To(Equal([]events.Change{
		{Object: "Deployment/shop/web", Path: "spec.replicas", Before: "3", After: "1", Manager: "kubectl-edit"},
	}))
	g.Expect(eventChanges("X/y", nil, nil)).To(BeEmpty())

	long := `"` + strings.Repeat("é", maxEventValueLen) + `"`
	ev := eventChanges("ConfigMap/n/c", []diff.Change{{Path: "data.big", Before: long, After: `"small"`}}, nil)
	g.Expect(ev[0].After).To(Equal(`"small"`))
	g.Expect(len(ev[0].Before)).To(BeNumerically("<=", maxEventValueLen))
	g.Expect(ev[0].Before).To(MatchRegexp(`^"é+… \(1,0\d\d more bytes\)$`))
	g.Expect(strings.ToValidUTF8(ev[0].Before, "?")).To(Equal(ev[0].Before), "cut inside a rune")

	shown, note := diff.Truncate(eventChanges("X/y", []diff.Change{{Path: "a"}, {Path: "b"}, {Path: "c"}}, nil), 1)
	g.Expect(shown).To(Equal([]events.Change{{Object: "X/y", Path: "a"}}))
	g.Expect(note).To(Equal("and 2 more changes"))
}

// A foreign write names its field manager on each change of the drift
// events, the UI's "who changed it"; the manager is read before the revert
// gives the field back to plumb-sync.
func TestDriftEventsNameTheFieldManagerOfTheForeignWrite(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:4444", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:4444")

	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(int32(4))
	g.Expect(env.Client.Patch(ctx, d, patch, client.FieldOwner("intruder"))).To(Succeed())

	want := And(
		HaveField("Object", "Deployment/"+ks.Namespace+"/web"),
		HaveField("Path", "spec.replicas"),
		HaveField("Before", "4"),
		HaveField("After", "1"),
		HaveField("Manager", "intruder"),
	)
	g.Eventually(func(g Gomega) {
		for _, reason := range []string{kustomizev1.DriftDetectedReason, kustomizev1.DriftCorrectedReason} {
			found := subscription.withReason(reason)
			g.Expect(found).NotTo(BeEmpty(), reason)
			g.Expect(found[len(found)-1].Changes).To(ContainElement(want), reason)
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(replicas(ctx, ks.Namespace, "web")).To(Equal(int32(1)))
}
