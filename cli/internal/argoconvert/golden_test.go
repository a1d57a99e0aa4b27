package argoconvert_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"plumb.dev/cli/internal/argoconvert"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// convertFile converts one testdata file with the command's defaults.
func convertFile(t *testing.T, path string) []argoconvert.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := argoconvert.Convert(data, argoconvert.DefaultOptions())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rs
}

// TestConversionsMatchTheGoldenFiles converts every input under
// testdata/{applications,applicationsets,projects} and compares the
// output with testdata/golden (go test -update rewrites them).
func TestConversionsMatchTheGoldenFiles(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if filepath.Base(filepath.Dir(in)) == "golden" {
			continue
		}
		n++
		t.Run(in, func(t *testing.T) {
			var out bytes.Buffer
			for _, r := range convertFile(t, in) {
				if err := argoconvert.Write(&out, r); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", "golden", filepath.Base(filepath.Dir(in)), filepath.Base(in))
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%s differs from %s:\n%s", in, golden, out.String())
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d inputs found", n)
	}
}
