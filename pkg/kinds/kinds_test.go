package kinds_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/kinds"
)

// The table agrees with the CRDs that deploy/ installs: one entry per CRD,
// with its group, storage version, Kind, plural resource and short names.
func TestTheTableMatchesTheCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crds", "*.plumb.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crds: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names := crd.Spec.Names
		k, ok := kinds.Lookup(names.Kind)
		if !ok {
			t.Errorf("%s: kind %s is not in the table", f, names.Kind)
			continue
		}
		seen[names.Kind] = true
		var storage string
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
		}
		if k.GVK.Group != crd.Spec.Group || k.GVK.Version != storage {
			t.Errorf("%s: table says %s, the CRD %s/%s", names.Kind, k.GVK.GroupVersion(), crd.Spec.Group, storage)
		}
		if k.Resource != names.Plural {
			t.Errorf("%s: table says resource %q, the CRD %q", names.Kind, k.Resource, names.Plural)
		}
		if !slices.Equal(k.ShortNames, names.ShortNames) {
			t.Errorf("%s: table says short names %v, the CRD %v", names.Kind, k.ShortNames, names.ShortNames)
		}
		if !strings.EqualFold(k.Plural, names.Plural) {
			t.Errorf("%s: plural %q is not resource %q written out", names.Kind, k.Plural, names.Plural)
		}
	}
	for _, k := range kinds.All() {
		if !seen[k.GVK.Kind] {
			t.Errorf("%s is in the table but deploy/crds has no CRD for it", k.GVK.Kind)
		}
	}
}

// Every kind the API groups register is in the table, and each entry
// makes objects and lists of its own kind.
func TestTheTableMatchesTheSchemes(t *testing.T) {
	s := runtime.NewScheme()
	if err := kinds.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for gvk, typ := range s.AllKnownTypes() {
		// Each group version also registers metav1's kinds (options,
		// Status, WatchEvent, APIGroup…): only Plumb's groups' own
		// count.
		if strings.HasSuffix(gvk.Kind, "List") || typ.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" {
			continue
		}
		k, ok := kinds.Lookup(gvk.Kind)
		if !ok {
			t.Errorf("%s is registered but not in the table", gvk)
			continue
		}
		if k.GVK != gvk {
			t.Errorf("%s: table says %s", gvk, k.GVK)
		}
	}
	for _, k := range kinds.All() {
		gvks, _, err := s.ObjectKinds(k.New())
		if err != nil || len(gvks) != 1 || gvks[0] != k.GVK {
			t.Errorf("%s: New() makes %v (%v)", k.GVK.Kind, gvks, err)
		}
		lists, _, err := s.ObjectKinds(k.NewList())
		if err != nil || len(lists) != 1 || lists[0].Kind != k.GVK.Kind+"List" {
			t.Errorf("%s: NewList() makes %v (%v)", k.GVK.Kind, lists, err)
		}
		if got, ok := kinds.Of(k.New()); !ok || got.GVK != k.GVK {
			t.Errorf("%s: Of(New()) = %v", k.GVK.Kind, got.GVK)
		}
		for _, name := range append([]string{k.Route(), k.Resource, strings.ToUpper(k.GVK.Kind)}, k.ShortNames...) {
			if got, ok := kinds.Lookup(name); !ok || got.GVK != k.GVK {
				t.Errorf("Lookup(%q) = %v, want %s", name, got.GVK, k.GVK)
			}
		}
	}
}

// The kinds a webhook or plumb reconcile may request a reconcile of are
// those that record the request.
func TestRequestableKinds(t *testing.T) {
	var got []string
	for _, k := range kinds.Where(kinds.Kind.Requestable) {
		got = append(got, k.GVK.Kind)
	}
	want := []string{"Alert", "ArtifactGenerator", "Bucket", "GitRepository", "HelmChart", "HelmRelease", "HelmRepository", "ImagePolicy", "ImageRepository", "ImageUpdateAutomation", "Kustomization", "OCIRepository", "ObjectSet", "Provider", "Receiver"}
	if !slices.Equal(got, want) {
		t.Errorf("requestable kinds %v, want %v", got, want)
	}
}

// Every field manager follows one rule, the names already in clusters
// among them.
func TestFieldManagersFollowOneRule(t *testing.T) {
	for got, want := range map[string]string{
		kinds.FieldManager(kinds.SourceController):              "plumb-source",
		kinds.FieldManager(kinds.RenderController):              "plumb-render",
		kinds.FieldManager(kinds.SyncController):                "plumb-sync",
		kinds.FieldManager(kinds.NotificationController):        "plumb-notification",
		kinds.FieldManager(kinds.ImageController):               "plumb-image",
		kinds.FieldManager(kinds.SyncController, "inventory"):   "plumb-sync-inventory",
		kinds.FieldManager(kinds.RenderController, "finalizer"): "plumb-render-finalizer",
		kinds.FieldManager("ui"):                                "plumb-ui",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
