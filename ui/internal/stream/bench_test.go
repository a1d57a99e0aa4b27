package stream

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"plumb.dev/pkg/events"
)

// fullIndex is an Index at its default bound, one drift event in a
// hundred, over 500 Kustomizations in 10 namespaces.
func fullIndex(b *testing.B) *Index {
	b.Helper()
	x := newIndex((&Config{}).withDefaults())
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range DefaultMaxEvents {
		reason := "ReconciliationSucceeded"
		if i%100 == 0 {
			reason = driftCorrected
		}
		e := event("Kustomization", fmt.Sprint("ns", i%10), fmt.Sprint("k", i%500), reason)
		e.Changes = []events.Change{{Object: "Deployment/apps/web", Path: "spec.replicas", Before: "5", After: "2", Manager: "kubectl-edit"}}
		data, err := json.Marshal(complete(e, at.Add(time.Duration(i)*time.Second)))
		if err != nil {
			b.Fatal(err)
		}
		x.add(uint64(i+1), data)
	}
	return x
}

// A page of the drift timeline of one Kustomization: the worst case, a
// scan of the whole index for a few matches.
func BenchmarkDriftOfOneObject(b *testing.B) {
	x := fullIndex(b)
	f := filter{kind: "kustomization", namespace: "ns0", name: "k0", reasons: []string{driftDetected, driftCorrected}}
	b.ResetTimer()
	for b.Loop() {
		found, _ := x.query(f, 0, DefaultLimit, MaxScanned, showAll)
		if len(found) == 0 {
			b.Fatal("nothing found")
		}
	}
}

// The first page of the whole stream: the common case.
func BenchmarkNewestEvents(b *testing.B) {
	x := fullIndex(b)
	b.ResetTimer()
	for b.Loop() {
		if found, _ := x.query(filter{}, 0, MaxLimit, MaxScanned, showAll); len(found) != MaxLimit {
			b.Fatal("short page")
		}
	}
}
