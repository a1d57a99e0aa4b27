package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// boundHistory keeps max entries of a history, newest first, dropping the
// oldest ones — but not one that pinned says must stay (a HelmRelease's
// deployed release); the entry before it goes instead. Both kinds' status
// histories are bounded with it.
func boundHistory[T any](history []T, max int, pinned func(T) bool) []T {
	for len(history) > max {
		drop := len(history) - 1
		for drop > 0 && pinned != nil && pinned(history[drop]) {
			drop--
		}
		history = append(history[:drop:drop], history[drop+1:]...)
	}
	return history
}

// recordSync records the sync operation a run of a Kustomization made, if
// it made one (a resync of a sync that succeeded is none: a steady state
// writes no status), in status.history, as Flux's kustomize-controller
// does: one entry per rendered artifact digest, the sync of a digest
// already there updating its entry (lastReconciled*, one more
// totalReconciliation) and moving it first, a new digest adding an entry
// first, at most kustomizev1.MaxHistory.
func recordSync(_ context.Context, s *syncRun) {
	ks, ok := s.out.(*kustomizev1.Kustomization)
	if !ok || !s.op.made {
		return
	}
	finished := time.Now()
	now := metav1.NewTime(finished.Truncate(time.Second))
	entry := meta.Snapshot{Digest: s.digest, FirstReconciled: now}
	history := make(meta.History, 0, len(ks.Status.History)+1)
	for _, h := range ks.Status.History {
		if h.Digest == s.digest {
			entry = *h.DeepCopy()
			continue
		}
		history = append(history, h)
	}
	entry.LastReconciled = now
	entry.LastReconciledDuration = metav1.Duration{Duration: operationDuration(s, finished)}
	entry.LastReconciledStatus = s.op.outcome()
	entry.TotalReconciliations++
	entry.Metadata = map[string]string{meta.HistoryRevisionKey: s.revision}
	ks.Status.History = boundHistory(append(meta.History{entry}, history...), kustomizev1.MaxHistory, nil)
}

// operationDuration is how long the sync operation of s took until
// finished. status keeps its start to the second only; an operation that
// this run started is timed from the run's start instead, so that a sync
// shorter than a second does not read 0s (Flux's duration is not rounded).
func operationDuration(s *syncRun, finished time.Time) time.Duration {
	started := s.operationStart().Time
	if !s.start.IsZero() && !started.Before(s.start.Truncate(time.Second)) {
		return finished.Sub(s.start)
	}
	return finished.Sub(started)
}
