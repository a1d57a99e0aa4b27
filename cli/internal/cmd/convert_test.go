package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertArgoCDWritesOneFilePerObjectAndExitsOneOnARefusal runs the
// verb as a user would: two files, one with a plugin Application that
// cannot be converted, into a folder.
func TestConvertArgoCDWritesOneFilePerObjectAndExitsOneOnARefusal(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join("..", "argoconvert", "testdata", "applications")
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"convert", "argocd", "-o", filepath.Join(dir, "out"),
		filepath.Join(in, "guestbook.yaml"), filepath.Join(in, "plugin-kasane.yaml")}, &out, &errOut)
	if code != ExitNegative {
		t.Fatalf("exit %d, want %d (one Application refused); stderr:\n%s", code, ExitNegative, errOut.String())
	}
	if !strings.Contains(errOut.String(), "config management plugins are not supported") || !strings.Contains(errOut.String(), "1 of 2 objects not converted") {
		t.Errorf("stderr does not say what was refused:\n%s", errOut.String())
	}
	guestbook, err := os.ReadFile(filepath.Join(dir, "out", "application-argocd-example.guestbook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: GitRepository", "kind: Kustomization", "path: ./guestbook", "targetNamespace: guestbook"} {
		if !strings.Contains(string(guestbook), want) {
			t.Errorf("the guestbook's file misses %q:\n%s", want, guestbook)
		}
	}
	kasane, err := os.ReadFile(filepath.Join(dir, "out", "application-argocd-example.plugin-kasane.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kasane), "# NOT CONVERTED:") || strings.Contains(string(kasane), "kind:") {
		t.Errorf("the refused Application's file should hold only the reason:\n%s", kasane)
	}
}

// TestConvertArgoCDReadsStdinIntoTheNamespaceOfDashN converts from stdin
// with -n, printing to stdout.
func TestConvertArgoCDReadsStdinIntoTheNamespaceOfDashN(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "argoconvert", "testdata", "projects", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	root := newRoot(&stdout, new(bytes.Buffer))
	root.SetIn(bytes.NewReader(in))
	root.SetArgs([]string{"convert", "argocd", "-", "-n", "team-shop"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: ServiceAccount", "name: project-shop", "namespace: team-shop", "kind: RoleBinding"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout misses %q:\n%s", want, stdout.String())
		}
	}
}
