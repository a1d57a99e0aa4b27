package main

import (
	"os"
	"strings"
	"testing"

	"plumb.dev/api/fluxport"
)

// The committed page is what the committed field list and deploy/crds
// make: a CRD change that adds or drops a Flux field, or a new kind,
// fails here until `make generate` rewrites the page.
func TestThePageIsCurrent(t *testing.T) {
	data, err := os.ReadFile("flux-fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	flux, err := parseFields(data)
	if err != nil {
		t.Fatal(err)
	}
	plumb, err := readCRDs("../../../deploy/crds")
	if err != nil {
		t.Fatal(err)
	}
	want := page(flux, plumb)
	got, err := os.ReadFile("../../../docs/api/porting-from-flux.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("docs/api/porting-from-flux.md is stale: run make generate")
	}
}

// A field Plumb's CRD lacks is refused, one it has is supported, an enum
// value it lacks is named, and a kind it lacks is said to be missing.
func TestTheTableSaysWhatPlumbAccepts(t *testing.T) {
	flux := map[string]*kind{
		"Widget": {Group: "widgets.toolkit.fluxcd.io", Version: "v1", Kind: "Widget", Fields: []field{
			{Part: "spec", Name: "interval"},
			{Part: "spec", Name: "mode", Enum: []string{"a", "b", "c"}},
			{Part: "spec", Name: "shiny"},
			{Part: "status", Name: "history"},
		}},
		"Gadget": {Group: "gadgets.toolkit.fluxcd.io", Version: "v1", Kind: "Gadget", Fields: []field{{Part: "spec", Name: "x"}}},
	}
	plumb := map[string]*kind{
		"Widget": {Group: "widgets.plumb.dev", Version: "v1", Kind: "Widget", Fields: []field{
			{Part: "spec", Name: "interval"},
			{Part: "spec", Name: "mode", Enum: []string{"a", "c"}},
		}},
	}
	got := string(page(flux, plumb))
	for _, want := range []string{
		"Of Flux's 4 top-level spec fields, Plumb accepts 2.",
		"| `spec.interval` | yes |  |",
		"| `spec.mode` | yes, but not `b` |  |",
		"| `spec.shiny` | refused | not implemented: the API server refuses it as an unknown field |",
		"| `status.history` | not written |  |",
		"## Gadget\n\nFlux's `gadgets.toolkit.fluxcd.io/v1`. Plumb has no such kind yet",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the page lacks %q:\n%s", want, got)
		}
	}
}

// The list survives its own format.
func TestTheFieldListReadsBack(t *testing.T) {
	in := map[string]*kind{"Widget": {Group: "g.toolkit.fluxcd.io", Version: "v1", Kind: "Widget", Fields: []field{
		{Part: "spec", Name: "mode", Enum: []string{"a", "b"}}, {Part: "status", Name: "conditions"},
	}}}
	out, err := parseFields(writeFields(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(writeFields(out)), string(writeFields(in)); got != want {
		t.Fatalf("read back:\n%s\nwant:\n%s", got, want)
	}
}

// A field fluxport gives a reason for is one Plumb's CRD lacks: a change
// that implements it must drop the reason too, or Plumb's sync errors
// would explain a refusal that no longer happens.
func TestEveryExplainedFieldIsRefused(t *testing.T) {
	plumb, err := readCRDs("../../../deploy/crds")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range fluxport.Fields() {
		kindName, path, _ := strings.Cut(key, ".")
		part, name, _ := strings.Cut(path, ".")
		if strings.Contains(name, ".") {
			continue // a nested field: the page lists top-level ones
		}
		k, ok := plumb[kindName]
		if !ok {
			t.Errorf("%s: Plumb has no kind %s", key, kindName)
			continue
		}
		if _, ok := find(k.Fields, part, name); ok {
			t.Errorf("%s is in Plumb's CRD: drop its reason from api/fluxport", key)
		}
	}
}

// An accepted field's note names the fields inside it that Plumb refuses,
// with fluxport's reasons, after the note's own words.
func TestAnAcceptedFieldNamesItsRefusedParts(t *testing.T) {
	got := withRefusedParts("`force` as in Flux", "HelmRelease", "spec.upgrade")
	for _, want := range []string{
		"`force` as in Flux; refused: ",
		"`preserveValues` (" + fluxport.Refused("HelmRelease", "spec.upgrade.preserveValues") + ")",
		"`disableOpenAPIValidation` (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("note %q lacks %q", got, want)
		}
	}
	if got := withRefusedParts("", "HelmRelease", "spec.test"); got != "" {
		t.Errorf("a field with no refused part got %q", got)
	}
}
