package main

import (
	"bytes"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/kinds/"+outputFile)

const fixture = "testdata/kinds"

// The fixture's generated file is what kindgen writes for it. The file is
// in the fixture's directory while kindgen reads it, so this also checks
// that kindgen does not take its own output for methods written by hand
// (Widget would get none).
func TestGeneratesTheFixturesFile(t *testing.T) {
	got, err := generate(fixture)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(fixture, outputFile)
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated for %s:\n%s\nwant (%s; -update rewrites it):\n%s", fixture, got, name, want)
	}
}

// Each kind gets the methods its fields answer and it does not declare:
// Widget all four, Gadget (which declares GetRequeueAfter and
// GetRetryInterval) only IsSuspended, Sprocket (the names with other
// types) none, and the list and the template, which are not kinds, none.
func TestWritesTheMethodsAKindsFieldsAnswerAndItDoesNotDeclare(t *testing.T) {
	src, err := generate(fixture)
	if err != nil {
		t.Fatal(err)
	}
	got := methodsIn(t, src)
	want := []string{
		"Gadget.IsSuspended",
		"Widget.GetArtifact", "Widget.GetRequeueAfter", "Widget.GetRetryInterval", "Widget.IsSuspended",
	}
	if !slices.Equal(got, want) {
		t.Errorf("generated methods %v, want %v", got, want)
	}
}

// The fixture, with its generated file, compiles, and its kinds then
// implement api/meta's interfaces (the assertions in widget.go).
func TestTheFixtureCompilesWithItsGeneratedMethods(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "build", "./"+fixture)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./%s: %v\n%s", fixture, err, out)
	}
}

// A kind with spec.retryInterval and nothing to fall back on is an error
// rather than a GetRetryInterval that answers 0 while it is unset.
func TestRefusesARetryIntervalWithoutAnIntervalToFallBackOn(t *testing.T) {
	_, err := generate("testdata/noretryfallback")
	if err == nil || !strings.Contains(err.Error(), "Timer") || !strings.Contains(err.Error(), "declare GetRetryInterval by hand") {
		t.Fatalf("generate = %v, want an error naming Timer and GetRetryInterval", err)
	}
}

// write creates the file when a kind gains a field kindgen knows, and
// removes it when no kind needs it any more, so a stale one cannot linger.
func TestWriteFollowsThePackage(t *testing.T) {
	dir := t.TempDir()
	source := func(specFields string) {
		t.Helper()
		src := `package p

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type Thing struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec ThingSpec
}

type ThingSpec struct {
` + specFields + `
}
`
		if err := os.WriteFile(filepath.Join(dir, "thing.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(dir, outputFile)

	source("Suspend bool `json:\"suspend\"`")
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := methodsIn(t, out); !slices.Equal(got, []string{"Thing.IsSuspended"}) {
		t.Errorf("written methods %v, want [Thing.IsSuspended]", got)
	}

	source("Paused bool")
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after the kind lost spec.suspend: %v, want it removed", outputFile, err)
	}
}

// The API packages' generated files are what kindgen writes for them now,
// so `go test ./api/...` fails as `make verify` does when they are stale.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	dirs, err := filepath.Glob("../../*/v*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 4 {
		t.Fatalf("found the API packages %v; want at least the four groups'", dirs)
	}
	for _, dir := range dirs {
		want, err := generate(dir)
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join(dir, outputFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is stale; run make generate", filepath.Join(dir, outputFile))
		}
	}
}

// methodsIn returns the methods src declares as Receiver.Method, sorted.
func methodsIn(t *testing.T, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), outputFile, src, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	var out []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
			out = append(out, receiverName(fn.Recv.List[0].Type)+"."+fn.Name.Name)
		}
	}
	slices.Sort(out)
	return out
}
