package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/kinds"
)

// Every CRD that deploy/ installs is a kind the commands know, so check
// checks it, get all lists it and delete and completion offer it; and the
// commands know no kind without a CRD. SyncWindowPolicy, configuration
// that sync-controller reads, has no status to check or wait for: kubectl
// reads and writes it.
func TestEveryInstalledCRDIsACommandKind(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "deploy", "crds", "*.plumb.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crds: %v", err)
	}
	var installed, known []string
	configOnly := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if crd.Spec.Names.Kind == kustomizev1.SyncWindowPolicyKind {
			configOnly++
			continue
		}
		installed = append(installed, crd.Name)
	}
	for _, k := range allKinds {
		known = append(known, crdName(k))
	}
	slices.Sort(installed)
	slices.Sort(known)
	if !slices.Equal(installed, known) {
		t.Errorf("deploy/crds installs %v, the commands know %v", installed, known)
	}
	if len(allKinds)+configOnly != len(kinds.All()) {
		t.Errorf("the commands know %d kinds, pkg/kinds %d", len(allKinds), len(kinds.All()))
	}
}
