package controller

import (
	"context"
	"os"
	"strings"
	"testing"

	"plumb.dev/pkg/artifact"
)

// One reconcile parses an index once, however many dependencies (or the
// chart itself) it serves: the second lookup of the same digest is the
// same parsed index, even once the file is gone.
func TestChartStateParsesAnIndexOnce(t *testing.T) {
	s, err := artifact.NewStorage(t.TempDir(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	index := "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 1.0.0\n    apiVersion: v2\n    urls: [app-1.0.0.tgz]\n"
	a, err := s.Store(context.Background(), artifact.Ref{Kind: "HelmRepository", Namespace: "ns", Name: "repo"},
		"index.yaml", strings.NewReader(index))
	if err != nil {
		t.Fatal(err)
	}
	st := &chartState{}
	one, err := st.index(s, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.LocalPath(a.Path)); err != nil {
		t.Fatal(err)
	}
	two, err := st.index(s, a)
	if err != nil {
		t.Fatalf("the second lookup parsed again: %v", err)
	}
	if one != two || len(two.Entries["app"]) != 1 {
		t.Fatal("the second lookup is not the parsed index")
	}
	// Another reconcile parses afresh: nothing outlives it.
	if _, err := (&chartState{}).index(s, a); err == nil {
		t.Fatal("a new reconcile's state had the index without parsing it")
	}
}
