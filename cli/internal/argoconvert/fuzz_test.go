package argoconvert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"plumb.dev/cli/internal/argoconvert"
)

// FuzzConvert feeds arbitrary YAML to the converter, seeded with every
// testdata input: it must return a result or an error, never panic, and
// whatever it converts must print.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, p := range files {
		if filepath.Base(filepath.Dir(p)) == "golden" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec: {generators: [{matrix: {generators: [{matrix: {}}, 3]}}], template: 7}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := argoconvert.Convert(data, argoconvert.DefaultOptions())
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Err != nil && len(r.Objects) > 0 {
				t.Fatalf("a refused %s %s has objects", r.Kind, r.Name)
			}
			if err := argoconvert.Write(&bytes.Buffer{}, r); err != nil {
				t.Fatal(err)
			}
		}
	})
}
