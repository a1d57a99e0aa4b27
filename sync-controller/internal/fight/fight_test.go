package fight

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/object"
	"plumb.dev/sync-controller/internal/engine"
)

// The guard's decisions, on a clock the test moves: an ordinary drift is
// reverted at once; a repeat by the same manager within the window holds
// the correction for 0.1 s, 1 s, 10 s, … up to the interval; a manager
// that stays quiet for the window ends the fight.
func TestFightGuardBacksOffPerObjectAndManager(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1_000_000, 0)
	tracker := &Tracker{}
	fights := guard{t: tracker, opts: Options{Window: 30 * time.Second, FirstBackoff: 100 * time.Millisecond},
		owner: types.NamespacedName{Namespace: "ns", Name: "app"}, generation: 1, maxBackoff: 20 * time.Second,
		now: func() time.Time { return now }}
	web := object.ID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	drift := engine.Result{ID: web, Action: diff.Configured, Drift: true, Managers: []string{"hpa"},
		Changes: []diff.Change{{Path: "spec.replicas", Before: "3", After: "1"}}}
	reverted := drift
	reverted.Written = true

	// The first foreign write is ordinary drift: reverted at once.
	g.Expect(fights.Revert(drift)).To(BeTrue())
	contested, _ := fights.record(reverted, "h1")
	g.Expect(contested).To(BeFalse())

	// Another manager, or another field, is no repeat.
	other := drift
	other.Managers = []string{"kubectl-edit"}
	g.Expect(fights.Revert(other)).To(BeTrue())
	otherField := drift
	otherField.Changes = []diff.Change{{Path: "spec.paused"}}
	g.Expect(fights.Revert(otherField)).To(BeTrue())

	// The same manager rewrites the field 200 ms later: held for 0.1 s,
	// then 1 s, then 10 s, then the interval (20 s).
	for _, hold := range []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second, 20 * time.Second, 20 * time.Second} {
		now = now.Add(200 * time.Millisecond)
		g.Expect(fights.Revert(drift)).To(BeFalse(), "held")
		g.Expect(fights.Wait(web, "h1")).To(BeTrue())
		g.Expect(fights.due()).To(Equal(hold))
		g.Expect(fights.Wait(web, "h2")).To(BeFalse(), "a Git change is checked at once")
		now = now.Add(hold)
		g.Expect(fights.Wait(web, "h1")).To(BeFalse())
		g.Expect(fights.Revert(drift)).To(BeTrue(), "due")
		contested, _ = fights.record(reverted, "h1")
		g.Expect(contested).To(BeTrue())
	}
	all, started := fights.contests()
	g.Expect(started).To(HaveLen(1))
	g.Expect(all).To(ConsistOf(And(HaveField("Reverts", 6), HaveField("Manager", "hpa"))))
	_, started = fights.contests()
	g.Expect(started).To(BeEmpty(), "a fight is announced once")

	// Quiet within the window: still on. Quiet past it: over.
	unchanged := engine.Result{ID: web, Action: diff.Unchanged}
	now = now.Add(10 * time.Second)
	contested, ended := fights.record(unchanged, "h1")
	g.Expect(contested).To(BeTrue())
	g.Expect(ended).To(BeEmpty())
	now = now.Add(21 * time.Second)
	_, ended = fights.record(unchanged, "h1")
	g.Expect(ended).To(HaveLen(1))
	g.Expect(ended[0].why).To(ContainSubstring("hpa did not write the fields again within 30s"))
	all, _ = fights.contests()
	g.Expect(all).To(BeEmpty())
}

func TestPointersTurnDiffPathsIntoIgnoreRules(t *testing.T) {
	NewWithT(t).Expect(pointers([]string{"spec.replicas", "spec.template.spec.containers[0].image", `metadata.labels["app.kubernetes.io/name"]`})).
		To(Equal([]string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/app.kubernetes.io~1name"}))
}
