package controller

import (
	"context"
	"math"

	"golang.org/x/sync/semaphore"
)

// DefaultConcurrent is sync-controller's --concurrent default. A sync
// spends most of its time waiting on the API server (its applies and its
// status write), so a fleet of small Kustomizations syncs faster with many
// at once (docs/bench/fleet.md, runs 9–14). What the syncs hold in memory
// is bounded by bytes instead (ArtifactBudget).
const DefaultConcurrent = 16

// LargestAtOnce is how many runs holding the largest rendered artifacts
// (--max-artifact-size) may run at the same time: the most that
// --concurrent's old default of 4 allowed. The bound is on bytes, not on
// runs, so a fleet of small Kustomizations syncs many at once while what a
// few large ones hold at once stays what it was.
const LargestAtOnce = 4

// ArtifactBudget bounds the bytes of rendered artifacts that running syncs
// and deletions hold — downloaded, decoded, prepared and applied — by each
// artifact's announced size (status.renderedArtifact.size; a download is
// cut at that size, so an artifact that announces none, or more than the
// largest allowed, counts as the largest). A run takes its share before it
// reads its artifact and gives it back when it ends. One ArtifactBudget is
// shared by every reconciler of the process; a nil *ArtifactBudget bounds
// nothing.
type ArtifactBudget struct {
	sem     *semaphore.Weighted
	budget  int64
	maxSize int64
}

// NewArtifactBudget bounds runs holding artifacts of at most maxSize bytes
// to LargestAtOnce of the largest at once.
func NewArtifactBudget(maxSize int64) *ArtifactBudget {
	maxSize = min(max(maxSize, 1), math.MaxInt64/LargestAtOnce)
	budget := LargestAtOnce * maxSize
	return &ArtifactBudget{sem: semaphore.NewWeighted(budget), budget: budget, maxSize: maxSize}
}

// acquire waits until a run may hold an artifact announcing size, and
// returns the function that gives its share back, or ctx's error.
func (b *ArtifactBudget) acquire(ctx context.Context, size *int64) (func(), error) {
	if b == nil {
		return func() {}, nil
	}
	weight := b.maxSize
	if size != nil && *size >= 0 && *size < b.maxSize {
		weight = max(*size, 1)
	}
	weight = min(weight, b.budget)
	if err := b.sem.Acquire(ctx, weight); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(weight) }, nil
}
