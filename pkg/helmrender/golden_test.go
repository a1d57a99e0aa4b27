package helmrender

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

// helmTemplate renders archive through the SDK's own `helm template` path:
// action.Install in client-only dry-run mode with --include-crds, printed
// as pkg/cmd/template.go prints it (the manifests, then every hook).
func helmTemplate(t *testing.T, archive []byte, opts Options, extraAPIs []string) []byte {
	t.Helper()
	charter, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = opts.ReleaseName
	install.Namespace = opts.Namespace
	install.Replace = true
	install.IncludeCRDs = true
	install.IsUpgrade = !opts.IsInstall
	install.APIVersions = common.VersionSet(extraAPIs)
	if opts.Capabilities.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(opts.Capabilities.KubeVersion)
		if err != nil {
			t.Fatal(err)
		}
		install.KubeVersion = kv
	}
	vals := opts.Values
	if vals == nil {
		vals = map[string]any{}
	}
	rel, err := install.RunWithContext(context.Background(), charter.(*chart.Chart), vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	r := rel.(*release.Release)
	var out bytes.Buffer
	fmt.Fprintln(&out, strings.TrimSpace(r.Manifest))
	for _, h := range r.Hooks {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return out.Bytes()
}

// canonicalSet parses a multi-document stream into the sorted canonical
// YAML of each object, with the annotations Plumb adds to crds/ CRDs
// removed.
func canonicalSet(t *testing.T, data []byte) []string {
	t.Helper()
	nodes, err := kio.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes {
		for _, a := range []string{kustomizev1.PruneAnnotation, kustomizev1.SSAAnnotation} {
			if err := n.PipeE(kyaml.ClearAnnotation(a)); err != nil {
				t.Fatal(err)
			}
		}
		if len(n.GetAnnotations()) == 0 {
			// An emptied annotations map and none at all are one object.
			if meta, _ := n.Pipe(kyaml.Lookup("metadata")); meta != nil {
				_ = meta.PipeE(kyaml.Clear("annotations"))
			}
		}
		y, err := render.CanonicalYAML(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, y)
	}
	sort.Strings(out)
	return out
}

// TestGoldenHelmTemplate renders charts both ways and wants the same
// objects: the test chart with several option sets, and the benchmark's
// real-world chart.
func TestGoldenHelmTemplate(t *testing.T) {
	extra := []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}
	app := packageChart(t, "app", nil)
	platform := saveChart(t, filepath.Join("..", "bench", "helm", "testdata", "platform"))
	for name, tc := range map[string]struct {
		archive []byte
		opts    Options
	}{
		"defaults": {app, Options{ReleaseName: "web", Namespace: "apps", IsInstall: true}},
		"upgrade with values": {app, Options{ReleaseName: "shop", Namespace: "prod", Values: map[string]any{
			"replicas": 4, "config": map[string]any{"color": "red"}, "lib": map[string]any{"greeting": "hey"},
		}}},
		"kube version":    {app, Options{ReleaseName: "web", Namespace: "apps", IsInstall: true, Capabilities: Capabilities{KubeVersion: "v1.37.2"}}},
		"benchmark chart": {platform, Options{ReleaseName: "shop", Namespace: "prod", IsInstall: true, Capabilities: Capabilities{KubeVersion: "v1.37.2"}}},
		"benchmark chart, upgrade with values": {platform, Options{ReleaseName: "shop", Namespace: "prod", Capabilities: Capabilities{KubeVersion: "v1.37.2"}, Values: map[string]any{
			"global":     map[string]any{"logLevel": "debug"},
			"cache":      map[string]any{"enabled": false},
			"components": map[string]any{"auth": map[string]any{"replicas": 9, "ingress": map[string]any{"enabled": true}}},
		}}},
	} {
		t.Run(name, func(t *testing.T) {
			want := canonicalSet(t, helmTemplate(t, tc.archive, tc.opts, extra))
			opts := tc.opts
			opts.CRDs = helmv2.CRDsCreateReplace
			opts.Capabilities.APIVersions = append(append([]string(nil), common.DefaultVersionSet...), extra...)
			got := canonicalSet(t, mustRender(t, tc.archive, opts).Manifests)
			compareSets(t, got, want)
		})
	}
}

func compareSets(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d objects, helm template rendered %d", len(got), len(want))
	}
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
	}
	gotSet := map[string]bool{}
	for _, g := range got {
		gotSet[g] = true
		if !wantSet[g] {
			t.Errorf("rendered an object helm template did not:\n%s", g)
		}
	}
	for _, w := range want {
		if !gotSet[w] {
			t.Errorf("helm template rendered an object Render did not:\n%s", w)
		}
	}
}
