package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
)

// The bound is on bytes: many small artifacts at once, at most
// LargestAtOnce of the largest, and one that announces no size counts
// as the largest.
func TestTheArtifactBudgetBoundsBytesNotRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	d := NewArtifactBudget(1000)
	var releases []func()
	for range 100 {
		release, err := d.acquire(ctx, ptr.To[int64](40)) // 100 × 40 = the budget
		g.Expect(err).NotTo(HaveOccurred())
		releases = append(releases, release)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := d.acquire(short, ptr.To[int64](1))
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "the budget is spent")
	for _, r := range releases {
		r()
	}

	releases = nil
	for range LargestAtOnce {
		release, err := d.acquire(ctx, nil) // no size: the largest
		g.Expect(err).NotTo(HaveOccurred())
		releases = append(releases, release)
	}
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = d.acquire(short, ptr.To[int64](5000)) // more than allowed: counts as the largest
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	releases[0]()
	release, err := d.acquire(ctx, ptr.To[int64](5000))
	g.Expect(err).NotTo(HaveOccurred(), "a share given back is taken")
	release()

	var none *ArtifactBudget
	release, err = none.acquire(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	release()

	// Absurd sizes are clamped, not overflowed into no bound at all.
	huge := NewArtifactBudget(1 << 62)
	release, err = huge.acquire(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	for range LargestAtOnce - 1 {
		r, err := huge.acquire(short, nil)
		g.Expect(err).NotTo(HaveOccurred())
		defer r()
	}
	_, err = huge.acquire(short, nil)
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "still LargestAtOnce of the largest")
	release()
}
