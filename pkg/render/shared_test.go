package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/decrypt/decrypttest"
)

// A fleet renders one folder many times with different variables: the
// kustomize build runs once, and substitution and commonMetadata still
// run per Kustomization, on a copy.
func TestSharedBuildsRunKustomizeOncePerTreePathAndSpec(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := mkSource(t, work)
	g.Expect(os.MkdirAll(filepath.Join(src, "app"), 0o755)).To(Succeed())
	cmFile := filepath.Join(src, "app", "cm.yaml")
	g.Expect(os.WriteFile(cmFile, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${ns}\ndata:\n  v: one\n"), 0o644)).To(Succeed())
	shared := NewSharedBuilds(0)
	spec := func(team string) *kustomizev1.KustomizationSpec {
		return &kustomizev1.KustomizationSpec{
			Path:           "app",
			PostBuild:      &kustomizev1.PostBuild{},
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"team": team}},
		}
	}
	build := func(s *kustomizev1.KustomizationSpec, ns string, opts Options) string {
		opts.Vars = Variables{"ns": {Value: ns}}
		res, err := Build(context.Background(), work, s, opts)
		g.Expect(err).NotTo(HaveOccurred())
		return string(res.Manifests)
	}

	first := build(spec("a"), "app-a", Options{Shared: shared})
	g.Expect(first).To(ContainSubstring("namespace: app-a"))
	g.Expect(first).To(ContainSubstring("team: a"))
	g.Expect(shared.Len()).To(Equal(0), "a build is kept only when its key comes again")
	g.Expect(build(spec("a"), "app-a", Options{Shared: shared})).To(Equal(first))
	g.Expect(shared.Len()).To(Equal(1))

	// The tree is changed behind the cache's back (render-controller's
	// trees never are): a shared build does not read it again, a build
	// without sharing does.
	g.Expect(os.WriteFile(cmFile, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${ns}\ndata:\n  v: two\n"), 0o644)).To(Succeed())
	second := build(spec("b"), "app-b", Options{Shared: shared})
	g.Expect(second).To(ContainSubstring("v: one"), "kustomize did not run again")
	g.Expect(second).To(ContainSubstring("namespace: app-b"), "substitution runs per build")
	g.Expect(second).To(ContainSubstring("team: b"))
	g.Expect(second).NotTo(ContainSubstring("team: a"), "the first build's commonMetadata stayed in its copy")
	g.Expect(build(spec("b"), "app-b", Options{})).To(ContainSubstring("v: two"))

	// Other spec fields are another build.
	prefixed := spec("a")
	prefixed.NamePrefix = "x-"
	for range 2 {
		g.Expect(build(prefixed, "app-a", Options{Shared: shared})).To(ContainSubstring("name: x-settings"))
	}
	g.Expect(shared.Len()).To(Equal(2))

	// With decryption keys nothing is shared either way.
	dec := decryptor(t, map[string]string{"k.agekey": decrypttest.NewAgeKey(t).Identity})
	g.Expect(build(spec("a"), "app-a", Options{Shared: shared, Decryptor: dec})).To(ContainSubstring("v: two"))
	g.Expect(shared.Len()).To(Equal(2))

	// A failed build is not kept: neither kustomize's failure nor one
	// after it (the output's limit), however often it is retried.
	bad := spec("a")
	bad.Path = "missing"
	big := spec("a")
	big.NameSuffix = "-big"
	for range 3 {
		_, err := Build(context.Background(), work, bad, Options{Shared: shared})
		g.Expect(err).To(HaveOccurred())
		_, err = Build(context.Background(), work, big, Options{Shared: shared, Limits: Limits{MaxOutputBytes: 10}})
		g.Expect(err).To(MatchError(ContainSubstring("limit")))
	}
	g.Expect(shared.Len()).To(Equal(2))
}

// What a build keeps is counted in its output, not in what it read: one
// patch read once may change every object.
func TestSharedBuildsCountTheirOutput(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := mkSource(t, work)
	var objs strings.Builder
	for i := range 200 {
		fmt.Fprintf(&objs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)
	}
	g.Expect(os.WriteFile(filepath.Join(src, "cms.yaml"), []byte(objs.String()), 0o644)).To(Succeed())
	var data strings.Builder
	for i := range 100 {
		fmt.Fprintf(&data, "    key-%d: %s\n", i, strings.Repeat("v", 40))
	}
	spec := &kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
		Patch:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: any\ndata:\n" + data.String(),
		Target: &kustomizev1.Selector{Kind: "ConfigMap"},
	}}}
	shared := NewSharedBuilds(8 << 20) // entries up to 512 KiB of output
	for range 2 {
		res, err := Build(context.Background(), work, spec, Options{Shared: shared})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(res.Manifests)).To(BeNumerically(">", 512<<10), "the patch made the output large")
	}
	g.Expect(shared.Len()).To(Equal(0), "an output past a sixteenth of the budget is not kept")
}

func TestSharedBuildsStayWithinTheirBudget(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := mkSource(t, work)
	// Each build writes about 60 bytes; a budget of 16 × 100 keeps a few
	// and no more.
	shared := NewSharedBuilds(16 * 100)
	for i := range 40 {
		dir := filepath.Join(src, "apps", string(rune('a'+i%26))+string(rune('a'+i/26)))
		g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"), 0o644)).To(Succeed())
		rel, _ := filepath.Rel(src, dir)
		for range 2 {
			_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: rel}, Options{Shared: shared})
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(shared.Len()).To(BeNumerically(">", 0))
	g.Expect(shared.Len()).To(BeNumerically("<", 40))
	g.Expect(shared.output).To(BeNumerically("<=", shared.maxOutput))

	many := NewSharedBuilds(1 << 30)
	for i := range 40 {
		rel := filepath.Join("apps", string(rune('a'+i%26))+string(rune('a'+i/26)))
		for _, prefix := range []string{"x-", "y-", "x-", "y-"} {
			_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: rel, NamePrefix: prefix}, Options{Shared: many})
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(many.Len()).To(Equal(sharedBuildsMax), "at most sharedBuildsMax builds are kept")
}
