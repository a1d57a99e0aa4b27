package benchfig

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestAwaitRevertWaitsForTheForeignWriteThenGitsValue(t *testing.T) {
	g := NewWithT(t)
	var f Followers
	seen := f.Follow("ConfigMap/a")
	from := time.Now()
	// An older event with Git's value (before the edit), the foreign
	// write, then the revert.
	f.Deliver("ConfigMap/a", Observation{ResourceVersion: "9", Value: "git", At: from})
	f.Deliver("ConfigMap/b", Observation{ResourceVersion: "10", Value: "git", At: from})
	f.Deliver("ConfigMap/a", Observation{ResourceVersion: "10", Value: "foreign", At: from.Add(time.Millisecond)})
	f.Deliver("ConfigMap/a", Observation{ResourceVersion: "11", Value: "git", At: from.Add(150 * time.Millisecond)})
	d, err := AwaitRevert(context.Background(), seen, "10", "git", from, time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d).To(Equal(150*time.Millisecond), "the revert after the foreign write, not Git's value before it")

	f.Unfollow("ConfigMap/a")
	f.Deliver("ConfigMap/a", Observation{ResourceVersion: "12", Value: "foreign"}) // no one follows: dropped, no block
	seen = f.Follow("ConfigMap/a")
	f.Deliver("ConfigMap/a", Observation{ResourceVersion: "13", Value: "foreign"})
	_, err = AwaitRevert(context.Background(), seen, "13", "git", from, 50*time.Millisecond)
	g.Expect(err).To(MatchError(ContainSubstring("not reverted within 50ms (foreign write seen: true)")))
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	g := NewWithT(t)
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	g.Expect(Percentile(ds, 50)).To(Equal(50 * time.Millisecond))
	g.Expect(Percentile(ds, 99)).To(Equal(99 * time.Millisecond))
	g.Expect(Percentile(ds, 100)).To(Equal(100 * time.Millisecond))
	g.Expect(Percentile(nil, 50)).To(BeZero())
	g.Expect(ds[0]).To(Equal(100*time.Millisecond), "the input is not reordered")
}
