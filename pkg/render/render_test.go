package render

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Each success case renders a testdata folder and compares the output with
// testdata/golden/<name>.yaml (go test -run TestBuild -update rewrites them).
func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		spec kustomizev1.KustomizationSpec
		opts Options
		// objects the output must hold, as object.ID.String()
		objects []string
	}{
		{
			name: "plain-dir",
			dir:  "plain",
			objects: []string{
				"Namespace/shop",
				"ConfigMap/shop/db",
				"ConfigMap/shop/generated",
				"Service/shop/web",
				"Deployment/shop/web",
			},
		},
		{
			name:    "plain-subpath",
			dir:     "plain",
			spec:    kustomizev1.KustomizationSpec{Path: "./apps/web"},
			objects: []string{"Service/shop/web", "Deployment/shop/web"},
		},
		{
			name: "overlay-patches-images",
			dir:  "overlay",
			spec: kustomizev1.KustomizationSpec{
				Path:       "overlays/prod",
				NamePrefix: "shop-",
				NameSuffix: "-v2",
				Images:     []kustomizev1.Image{{Name: "ghcr.io/example/api", NewTag: "v1.2.3"}},
				Patches: []kustomizev1.Patch{
					{
						// strategic merge, naming its object
						Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n      - name: api\n        env:\n        - {name: MODE, value: prod}\n",
					},
					{
						// JSON 6902 with a target
						Patch:  `[{"op": "replace", "path": "/spec/ports/0/port", "value": 9090}]`,
						Target: &kustomizev1.Selector{Kind: "Service", Name: "^api$"},
					},
				},
				CommonMetadata: &kustomizev1.CommonMetadata{
					Labels:      map[string]string{"team": "payments"},
					Annotations: map[string]string{"owner": "alice"},
				},
			},
			objects: []string{"Service/prod/shop-api-v2", "Deployment/prod/shop-api-v2"},
		},
		{
			name:    "target-namespace",
			dir:     "overlay",
			spec:    kustomizev1.KustomizationSpec{Path: "overlays/prod", TargetNamespace: "staging"},
			objects: []string{"Service/staging/api", "Deployment/staging/api"},
		},
		{
			name:    "components",
			dir:     "components",
			spec:    kustomizev1.KustomizationSpec{Path: "app", Components: []string{"../components/monitoring", "../components/ha"}},
			objects: []string{"Deployment/api", "ServiceMonitor/api"},
		},
		{
			name: "substitution",
			dir:  "substitution",
			spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts: Options{Vars: Variables{
				"cluster_env": {Value: "prod"},
				"region":      {Value: "eu-west-1"},
				"db_password": {Value: "s3cr3t-value", Secret: true},
				"tier":        {Value: ""},
			}},
			objects: []string{"ConfigMap/apps/app-prod", "ConfigMap/apps/flux-script", "ConfigMap/apps/plumb-decides", "ConfigMap/apps/script"},
		},
		{
			name:    "substitution-undefined-is-empty",
			dir:     "substitution",
			spec:    kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts:    Options{Vars: Variables{"cluster_env": {Value: "dev"}}},
			objects: []string{"ConfigMap/apps/app-dev", "ConfigMap/apps/flux-script", "ConfigMap/apps/plumb-decides", "ConfigMap/apps/script"},
		},
		{
			name:    "no-postbuild-no-substitution",
			dir:     "substitution",
			opts:    Options{Vars: Variables{"cluster_env": {Value: "dev"}}},
			objects: []string{"ConfigMap/${namespace:=apps}/app-${cluster_env}", "ConfigMap/apps/flux-script", "ConfigMap/apps/plumb-decides", "ConfigMap/apps/script"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Build(context.Background(), workspace(t, tt.dir), &tt.spec, tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			var ids []string
			for _, o := range res.Objects {
				ids = append(ids, o.String())
			}
			g.Expect(ids).To(ConsistOf(tt.objects))

			golden := filepath.Join("testdata", "golden", tt.name+".yaml")
			if *update {
				g.Expect(os.MkdirAll(filepath.Dir(golden), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(golden, res.Manifests, 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(golden)
			g.Expect(err).NotTo(HaveOccurred(), "run go test -update to create %s", golden)
			g.Expect(string(res.Manifests)).To(Equal(string(want)))

			again, err := Build(context.Background(), workspace(t, tt.dir), &tt.spec, tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Digest).To(Equal(res.Digest), "the same input renders the same bytes")
		})
	}
}

func TestBuildRefusals(t *testing.T) {
	tests := []struct {
		name       string
		dir        string
		spec       kustomizev1.KustomizationSpec
		opts       Options
		wantReason string
		wantMsg    []string
		notInMsg   []string
	}{
		{
			name: "remote base", dir: "remote",
			wantReason: kustomizev1.RemoteResourceRefusedReason,
			wantMsg:    []string{`kustomization.yaml: resources "https://github.com/example/repo//deploy?ref=v1.0.0" refused`},
		},
		{
			name: "duplicate objects in plain files", dir: "duplicates",
			wantReason: kustomizev1.ValidationFailedReason,
			wantMsg:    []string{"duplicate object ConfigMap apps/settings", "a.yaml (document 1)", "b.yaml (document 2)"},
		},
		{
			name: "duplicate objects across versions", dir: "dup-versions",
			wantReason: kustomizev1.ValidationFailedReason,
			wantMsg:    []string{"duplicate object HorizontalPodAutoscaler.autoscaling apps/web", "autoscaling/v1 HorizontalPodAutoscaler apps/web", "autoscaling/v2 HorizontalPodAutoscaler apps/web"},
		},
		{
			name: "invalid YAML in a plain dir", dir: "invalid-yaml",
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{"invalid YAML in broken.yaml"},
		},
		{
			name: "invalid YAML under a kustomization", dir: "invalid-kustomize",
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{"kustomize build failed", "cm.yaml"},
		},
		{
			name: "object without a name", dir: "missing-name",
			wantReason: kustomizev1.ValidationFailedReason,
			wantMsg:    []string{"cm.yaml (document 1): v1 ConfigMap has no metadata.name"},
		},
		{
			name: "missing path", dir: "plain", spec: kustomizev1.KustomizationSpec{Path: "./nope"},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{`path "./nope" not found in the source`},
		},
		{
			name: "path with ..", dir: "plain", spec: kustomizev1.KustomizationSpec{Path: "apps/../../etc"},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{`must not contain ..`},
		},
		{
			name: "component leaving the source", dir: "components",
			spec:       kustomizev1.KustomizationSpec{Path: "app", Components: []string{"../../outside"}},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{`component "../../outside" leaves the source`},
		},
		{
			name: "remote resource in a spec component", dir: "components",
			spec:       kustomizev1.KustomizationSpec{Path: "app", Components: []string{"../components/remote"}},
			wantReason: kustomizev1.RemoteResourceRefusedReason,
			wantMsg:    []string{`components/remote/kustomization.yaml: resources "github.com/example/repo/deploy?ref=main" refused`},
		},
		{
			name: "strict substitution", dir: "substitution",
			spec:       kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts:       Options{StrictSubstitution: true, Vars: Variables{"cluster_env": {Value: "prod"}}},
			wantReason: kustomizev1.SubstituteFailedReason,
			wantMsg:    []string{"ConfigMap ${namespace:=apps}/app-${cluster_env}", "undefined variable(s) without a default: db_password, region"},
		},
		{
			name: "invalid variable name", dir: "substitution",
			spec:       kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts:       Options{Vars: Variables{"config.json": {Value: "x"}}},
			wantReason: kustomizev1.SubstituteFailedReason,
			wantMsg:    []string{`variable name "config.json" is invalid`},
		},
		{
			name: "secret value breaking the YAML is never shown", dir: "substitution",
			spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts: Options{Vars: Variables{
				"cluster_env": {Value: "prod"},
				"db_password": {Value: "hunter2: [oops", Secret: true},
			}},
			wantReason: kustomizev1.SubstituteFailedReason,
			wantMsg:    []string{"ConfigMap ${namespace:=apps}/app-${cluster_env}: not valid YAML after substitution"},
			notInMsg:   []string{"hunter2"},
		},
		{
			name: "secret value in a name is redacted", dir: "substitution",
			spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
			opts: Options{StrictSubstitution: true, Vars: Variables{
				"cluster_env": {Value: "topsecret", Secret: true},
			}},
			wantReason: kustomizev1.SubstituteFailedReason,
			wantMsg:    []string{"undefined variable(s)"},
			notInMsg:   []string{"topsecret"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Build(context.Background(), workspace(t, tt.dir), &tt.spec, tt.opts)
			g.Expect(res).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			g.Expect(Reason(err)).To(Equal(tt.wantReason), err.Error())
			for _, m := range tt.wantMsg {
				g.Expect(err.Error()).To(ContainSubstring(m))
			}
			for _, m := range tt.notInMsg {
				g.Expect(err.Error()).NotTo(ContainSubstring(m))
			}
		})
	}
}

func TestBuildSymlinks(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n"), 0o644)).To(Succeed())

	work := t.TempDir()
	src := SourceDir(work)
	g.Expect(os.MkdirAll(filepath.Join(src, "real"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(src, "real", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"), 0o644)).To(Succeed())
	g.Expect(os.Symlink("real", filepath.Join(src, "linked"))).To(Succeed())

	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: "linked"}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))

	g.Expect(os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(src, "real", "escape.yaml"))).To(Succeed())
	_, err = Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: "real"}, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("real/escape.yaml: it or a link on its way leads outside the source")))
}

func TestBuildRefusesRemoteForms(t *testing.T) {
	for _, ref := range []string{
		"https://example.com/cm.yaml",
		"http://example.com/cm.yaml",
		"github.com/example/repo/deploy?ref=main",
		"git@github.com:example/repo.git",
		"ssh://git@example.com/repo.git",
		"git::https://example.com/repo.git",
		"file:///etc/passwd",
	} {
		t.Run(ref, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			src := mkSource(t, work)
			k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- base\n"
			base := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + ref + "\n"
			g.Expect(os.WriteFile(filepath.Join(src, "kustomization.yaml"), []byte(k), 0o644)).To(Succeed())
			g.Expect(os.MkdirAll(filepath.Join(src, "base"), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(src, "base", "kustomization.yaml"), []byte(base), 0o644)).To(Succeed())
			_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(err).To(MatchError(ContainSubstring("base/kustomization.yaml: resources %q refused", ref)))
			g.Expect(Reason(err)).To(Equal(kustomizev1.RemoteResourceRefusedReason))
		})
	}
}

func TestBuildRefusesPluginsAndHelm(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := mkSource(t, work)
	k := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
generators:
- gen.yaml
`
	gen := `apiVersion: example.com/v1
kind: RunMe
metadata:
  name: x
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: /bin/sh
`
	g.Expect(os.WriteFile(filepath.Join(src, "kustomization.yaml"), []byte(k), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(src, "gen.yaml"), []byte(gen), 0o644)).To(Succeed())
	_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(Reason(err)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("external plugins disabled"))

	helmWork := t.TempDir()
	helm := mkSource(t, helmWork)
	k = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
helmCharts:
- name: podinfo
  version: 6.0.0
`
	g.Expect(os.WriteFile(filepath.Join(helm, "kustomization.yaml"), []byte(k), 0o644)).To(Succeed())
	_, err = Build(context.Background(), helmWork, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(Reason(err)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(err.Error()).To(ContainSubstring("must specify --enable-helm"))
}

// The canonical order is the kind order of a sync wave (pkg/object): a CRD
// after ConfigMaps (pkg/plan hoists it ahead of its custom resources),
// unlisted kinds, webhooks among them, after every listed kind; two
// versions of one object by version.
func TestCanonicalOrder(t *testing.T) {
	g := NewWithT(t)
	objs := []rendered{
		{id: object.ID{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: "w"}, version: "v1"},
		{id: object.ID{Group: "example.com", Kind: "Widget", Namespace: "a", Name: "x"}, version: "v1"},
		{id: object.ID{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "b"}, version: "v1"},
		{id: object.ID{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "a"}, version: "v1"},
		{id: object.ID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, version: "v1"},
		{id: object.ID{Kind: "Namespace", Name: "a"}, version: "v1"},
		{id: object.ID{Kind: "ConfigMap", Namespace: "a", Name: "c"}, version: "v1"},
		{id: object.ID{Group: "example.com", Kind: "Widget", Namespace: "b", Name: "y"}, version: "v2"},
		{id: object.ID{Group: "example.com", Kind: "Widget", Namespace: "b", Name: "y"}, version: "v1"},
	}
	for i := range objs {
		objs[i].yaml = "x: " + objs[i].id.Name + "\n"
	}
	sort.SliceStable(objs, func(i, j int) bool { return less(objs[i], objs[j]) })
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	g.Expect(got).To(Equal([]string{
		"v1 Namespace a", "v1 ConfigMap a/c", "apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
		"apps/v1 Deployment a/a", "apps/v1 Deployment a/b",
		"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration w",
		"example.com/v1 Widget a/x", "example.com/v1 Widget b/y", "example.com/v2 Widget b/y",
	}))
	res, err := assemble(objs[:7], Limits{}.withDefaults())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(7))
	g.Expect(res.Objects[2]).To(Equal(object.ID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}))
}

// One extracted source serves every build of its revision at once
// (render-controller's source cache): Build must leave the tree as it
// found it, on disk, even while other builds of the same tree run, and
// each build must give what it gives on a tree of its own.
func TestBuildsShareOneTreeWithoutWritingIt(t *testing.T) {
	g := NewWithT(t)
	shared := t.TempDir()
	for _, dir := range []string{"plain", "overlay"} {
		g.Expect(os.CopyFS(filepath.Join(SourceDir(shared), dir), os.DirFS(filepath.Join("testdata", dir)))).To(Succeed())
	}
	specs := []kustomizev1.KustomizationSpec{
		{Path: "plain"},          // a generated kustomization.yaml at spec.path
		{Path: "plain/apps/web"}, // one below it, generated again
		{Path: "overlay/overlays/prod", NamePrefix: "a-"},
		{Path: "overlay/overlays/prod", TargetNamespace: "b"},
	}
	want := make([]string, len(specs))
	for i := range specs {
		own := t.TempDir()
		g.Expect(os.CopyFS(SourceDir(own), os.DirFS(SourceDir(shared)))).To(Succeed())
		res, err := Build(context.Background(), own, &specs[i], Options{})
		g.Expect(err).NotTo(HaveOccurred())
		want[i] = res.Digest
	}
	before := treeSnapshot(t, shared)

	const rounds = 8
	errs := make(chan error, rounds*len(specs))
	got := make([][]string, rounds)
	var wg sync.WaitGroup
	for r := range rounds {
		got[r] = make([]string, len(specs))
		for i := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := Build(context.Background(), shared, &specs[i], Options{})
				if err != nil {
					errs <- err
					return
				}
				got[r][i] = res.Digest
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for r := range rounds {
		g.Expect(got[r]).To(Equal(want), "round %d", r)
	}
	g.Expect(treeSnapshot(t, shared)).To(Equal(before), "no build wrote to the shared tree")
}

// treeSnapshot maps every path below dir to its content (a folder to "/",
// a link to "-> target").
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			snap[rel] = "-> " + target
			return err
		case d.IsDir():
			snap[rel] = "/"
		default:
			data, err := os.ReadFile(p)
			snap[rel] = string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
