package controller

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// DefaultConcurrent is sync-controller's --concurrent default. A sync
// spends most of its time waiting on the API server (its applies and its
// status write), so a fleet of small Kustomizations syncs faster with many
// at once: with 4, the fleet benchmark's 1,000 Kustomizations of 4
// objects were Ready after 68.6 s, with 16 after 56.5 s, at the same peak
// memory (docs/bench/fleet.md). What a sync holds in memory is bounded by
// bytes instead (Downloads).
const DefaultConcurrent = 16

// DownloadsAtOnce is how many of the largest rendered artifacts
// (--max-artifact-size) may be downloaded and decoded at the same time:
// the most that --concurrent's old default of 4 allowed. The bound is on
// bytes, not on syncs, so a fleet of small Kustomizations syncs many at
// once (--concurrent) while the memory a few large ones can take at once
// stays what it was.
const DownloadsAtOnce = 4

// Downloads bounds the bytes of rendered artifacts being downloaded and
// decoded at once, by their announced size (status.renderedArtifact.size;
// the download refuses more than the largest allowed, so an artifact that
// announces no size counts as the largest). One Downloads is shared by
// every reconciler of the process. A nil *Downloads bounds nothing.
type Downloads struct {
	sem     *semaphore.Weighted
	budget  int64
	maxSize int64
}

// NewDownloads bounds downloads of artifacts of at most maxSize bytes to
// DownloadsAtOnce of the largest at once.
func NewDownloads(maxSize int64) *Downloads {
	budget := DownloadsAtOnce * max(maxSize, 1)
	return &Downloads{sem: semaphore.NewWeighted(budget), budget: budget, maxSize: max(maxSize, 1)}
}

// acquire waits until an artifact announcing size may be downloaded, and
// returns the function that gives its share back, or ctx's error.
func (d *Downloads) acquire(ctx context.Context, size *int64) (func(), error) {
	if d == nil {
		return func() {}, nil
	}
	weight := d.maxSize
	if size != nil && *size >= 0 && *size < d.maxSize {
		weight = max(*size, 1)
	}
	weight = min(weight, d.budget)
	if err := d.sem.Acquire(ctx, weight); err != nil {
		return nil, err
	}
	return func() { d.sem.Release(weight) }, nil
}
