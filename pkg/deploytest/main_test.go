package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"plumb.dev/pkg/testenv"
)

// env is the control plane every test that needs an API server shares.
var env *testenv.Environment

// root is the repository root (the folder holding go.work).
var root string

// controllers are the five programs deploy/ installs.
var controllers = []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller"}

const namespace = "plumb-system"

func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// NATS as deploy/nats runs it: the users and permissions of
	// accounts.conf, and TLS with client certificates on top.
	os.Exit(testenv.Run(m, &env, testenv.WithSecureNATS()))
}

// build renders the kustomization in dir the way `kubectl apply -k` does:
// kustomize's defaults (load restrictions to the root, no plugins).
func build(dir string) ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON, so numbers are int64 and float64 as the API
		// machinery expects, not YAML's int.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// buildBase renders deploy/ or fails the test.
func buildBase(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := build(filepath.Join(root, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the rendered object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns the rendered objects of kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
