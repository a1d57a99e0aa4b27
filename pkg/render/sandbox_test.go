package render

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// leakServer counts the requests it gets and answers each with a
// ConfigMap, so a fetch that got through would land in the render.
func leakServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked\ndata:\n  secret: from-the-inside\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

const kustomizationHeader = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

// Every form in which kustomize reaches the network is refused before
// anything is fetched: the server must see no request. Where kustomize
// fetches over HTTP, the same tree built by plain kustomize (no sandbox)
// does reach the server, so each case is a real vector.
func TestRenderingNeverReachesTheNetwork(t *testing.T) {
	srv, hits := leakServer(t)
	url := srv.URL + "/leak.yaml"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n"
	tests := []struct {
		name  string
		files map[string]string
		// wantMsg: the file and field named in the refusal.
		wantMsg string
		// fetches: plain kustomize fetches this case over HTTP.
		fetches bool
	}{
		{
			name: "builtin generator config listed under generators (files)",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "generators:\n- gen.yaml\n",
				"gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n",
			},
			wantMsg: `gen.yaml: ConfigMapGenerator.files "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "builtin generator config listed under generators (envs)",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "generators:\n- gen.yaml\n",
				"gen.yaml":           "apiVersion: builtin\nkind: SecretGenerator\nmetadata:\n  name: g\nenvs:\n- " + url + "\n",
			},
			wantMsg: `gen.yaml: SecretGenerator.envs "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "builtin generator written inline in the kustomization",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata:\n    name: g\n  files:\n  - leaked=" + url + "\n",
			},
			wantMsg: `kustomization.yaml (inline): ConfigMapGenerator.files "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "folder under transformers whose kustomization names a URL",
			files: map[string]string{
				"kustomization.yaml":    kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- tr\n",
				"cm.yaml":               cm,
				"tr/kustomization.yaml": kustomizationHeader + "resources:\n- " + url + "\n",
			},
			wantMsg: `tr/kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "folder under validators whose kustomization names a URL",
			files: map[string]string{
				"kustomization.yaml":    kustomizationHeader + "resources:\n- cm.yaml\nvalidators:\n- va\n",
				"cm.yaml":               cm,
				"va/kustomization.yaml": kustomizationHeader + "resources:\n- " + url + "\n",
			},
			wantMsg: `va/kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "PatchTransformer config whose path is a URL",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- pt.yaml\n",
				"cm.yaml":            cm,
				"pt.yaml":            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + url + "\n",
			},
			wantMsg: `pt.yaml: PatchTransformer.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "PatchTransformer config reached through a folder under transformers",
			files: map[string]string{
				"kustomization.yaml":    kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- tr\n",
				"cm.yaml":               cm,
				"tr/kustomization.yaml": kustomizationHeader + "resources:\n- pt.yaml\n",
				"tr/pt.yaml":            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + url + "\n",
			},
			wantMsg: `tr/pt.yaml: PatchTransformer.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "PatchJson6902Transformer config whose path is a URL",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- pt.yaml\n",
				"cm.yaml":            cm,
				"pt.yaml":            "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata:\n  name: p\ntarget:\n  version: v1\n  kind: ConfigMap\n  name: local\npath: " + url + "\n",
			},
			wantMsg: `pt.yaml: PatchJson6902Transformer.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "PatchStrategicMergeTransformer config whose paths hold a URL",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- pt.yaml\n",
				"cm.yaml":            cm,
				"pt.yaml":            "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata:\n  name: p\npaths:\n- " + url + "\n",
			},
			wantMsg: `pt.yaml: PatchStrategicMergeTransformer.paths "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "ReplacementTransformer config whose replacement path is a URL",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- rt.yaml\n",
				"cm.yaml":            cm,
				"rt.yaml":            "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata:\n  name: r\nreplacements:\n- path: " + url + "\n",
			},
			wantMsg: `rt.yaml: ReplacementTransformer.replacements.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "resources",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- " + url + "\n"},
			wantMsg: `kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		// kustomize decodes a kustomization as JSON, so a field name
		// matches in any case (Unicode folding included: ſ is s) and the
		// last of duplicate keys wins.
		{
			name:    "resources spelled in capitals",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "RESOURCES:\n- " + url + "\n"},
			wantMsg: `kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "resources spelled with a long s",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "reſources:\n- " + url + "\n"},
			wantMsg: `kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "resources given twice, the URL last",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nresources:\n- " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: resources "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "patches path spelled in capitals",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nPatches:\n- PATH: " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: patches.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "configMapGenerator files spelled in capitals",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "ConfigMapGenerator:\n- name: g\n  Files:\n  - leaked=" + url + "\n"},
			wantMsg: `kustomization.yaml: configMapGenerator.files "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "builtin generator config whose files are spelled in capitals",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "generators:\n- gen.yaml\n",
				"gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nFILES:\n- leaked=" + url + "\n",
			},
			wantMsg: `gen.yaml: ConfigMapGenerator.files "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "PatchTransformer config whose path is spelled in capitals",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- pt.yaml\n",
				"cm.yaml":            cm,
				"pt.yaml":            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\nPATH: " + url + "\n",
			},
			wantMsg: `pt.yaml: PatchTransformer.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "resource URL with a trailing newline",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- \"" + url + "\\n\"\n"},
			wantMsg: `kustomization.yaml: resources "` + url + `\n" refused`,
		},
		{
			name: "patches path",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\npatches:\n- path: " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: patches.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "patchesStrategicMerge",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\npatchesStrategicMerge:\n- " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: patchesStrategicMerge "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "patchesJson6902 path",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: local}\n  path: " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: patchesJson6902.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "replacements path",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nreplacements:\n- path: " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: replacements.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "openapi path",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nopenapi:\n  path: " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: openapi.path "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "configurations",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nconfigurations:\n- " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: configurations "` + url + `" refused`,
			fetches: true,
		},
		{
			name: "crds",
			files: map[string]string{
				"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ncrds:\n- " + url + "\n",
				"cm.yaml":            cm,
			},
			wantMsg: `kustomization.yaml: crds "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "configMapGenerator files",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "configMapGenerator:\n- name: g\n  files:\n  - leaked=" + url + "\n"},
			wantMsg: `kustomization.yaml: configMapGenerator.files "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "secretGenerator envs",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "secretGenerator:\n- name: g\n  envs:\n  - " + url + "\n"},
			wantMsg: `kustomization.yaml: secretGenerator.envs "` + url + `" refused`,
			fetches: true,
		},
		{
			name:    "components",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "components:\n- " + url + "\n"},
			wantMsg: `kustomization.yaml: components "` + url + `" refused`,
		},
		{
			name:    "helmCharts repository",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "helmCharts:\n- name: app\n  repo: " + srv.URL + "\n"},
			wantMsg: `kustomization.yaml: helmCharts.repo "` + srv.URL + `" refused`,
		},
		{
			name:    "Git clone, user@host/org/repo",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- git@127.0.0.1/org/repo\n"},
			wantMsg: `kustomization.yaml: resources "git@127.0.0.1/org/repo" refused`,
		},
		{
			name:    "Git clone, scp-like",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- git@127.0.0.1:org/repo\n"},
			wantMsg: `kustomization.yaml: resources "git@127.0.0.1:org/repo" refused`,
		},
		{
			name:    "Git clone, github.com path",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- github.com/org/repo/deploy\n"},
			wantMsg: `kustomization.yaml: resources "github.com/org/repo/deploy" refused`,
		},
		{
			name:    "Git clone, ref query",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- example.com/org/repo?ref=main\n"},
			wantMsg: `kustomization.yaml: resources "example.com/org/repo?ref=main" refused`,
		},
		{
			name:    "Git clone, go-getter prefix",
			files:   map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- git::" + srv.URL + "/org/repo.git\n"},
			wantMsg: `kustomization.yaml: resources "git::` + srv.URL + `/org/repo.git" refused`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			writeTree(t, SourceDir(work), tt.files)
			hits.Store(0)
			res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(res).To(BeNil())
			g.Expect(Reason(err)).To(Equal(kustomizev1.RemoteResourceRefusedReason), err.Error())
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))
			g.Expect(hits.Load()).To(BeZero(), "the server was reached")

			if tt.fetches {
				plainKustomize(SourceDir(work))
				g.Expect(hits.Load()).To(BeNumerically(">", 0), "plain kustomize does not fetch this case: not a vector")
			}
		})
	}
}

// plainKustomize builds dir as kustomize would without the sandbox (its
// result does not matter, only whether it fetched).
func plainKustomize(dir string) {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = kustypes.LoadRestrictionsRootOnly
	opts.PluginConfig = kustypes.DisabledPluginConfig()
	_, _ = krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// aliasBomb is a ConfigMap of about 600 bytes whose aliases expand to
// 9^levels scalars.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [x,x,x,x,x,x,x,x,x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// An alias bomb is refused by counting, before kustomize expands it: the
// process's heap stays small (it took more than 5 GiB before the sandbox).
func TestAliasBombIsRefusedBeforeExpansion(t *testing.T) {
	for _, where := range []struct{ name, file, kustomization string }{
		{"in a plain folder", "bomb.yaml", ""},
		{"as a resource", "bomb.yaml", kustomizationHeader + "resources:\n- bomb.yaml\n"},
		{"as an inline patch", "cm.yaml", kustomizationHeader + "resources:\n- cm.yaml\npatches:\n- patch: |\n" + indent(aliasBomb(8), "    ")},
		// A kustomization that lists only files is read by the fast path
		// too (listedFiles): the same count refuses it there.
		{"in a kustomization that lists files", "cm.yaml", kustomizationHeader + "resources:\n- cm.yaml\ncommonAnnotations:\n" +
			aliasBomb(8)[strings.Index(aliasBomb(8), "data:\n")+len("data:\n"):]},
	} {
		t.Run(where.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			files := map[string]string{where.file: aliasBomb(8)}
			if where.file == "cm.yaml" {
				files[where.file] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n"
			}
			if where.kustomization != "" {
				files["kustomization.yaml"] = where.kustomization
			}
			writeTree(t, SourceDir(work), files)
			g.Expect(len(aliasBomb(8))).To(BeNumerically("<", 1000))

			before := allocated()
			_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(Reason(err)).To(Equal(meta.LimitExceededReason), err.Error())
			g.Expect(err.Error()).To(ContainSubstring("YAML nodes"))
			g.Expect(err.Error()).To(ContainSubstring("--max-yaml-nodes"))
			// 8 levels expand to 43 million scalars: gigabytes in kustomize.
			g.Expect(allocated()-before).To(BeNumerically("<", 64<<20), "bytes allocated by the build")
		})
	}
}

// The same bomb a level smaller renders once the limit allows it, so the
// count above is what refuses it, not some other error.
func TestAliasesWithinTheLimitRender(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	writeTree(t, SourceDir(work), map[string]string{"bomb.yaml": aliasBomb(2)})
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(res.Manifests), "- x")).To(Equal(9 + 9*9 + 9*9*9)) // l0, l1, l2 expanded

	_, err = Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{Limits: Limits{MaxNodes: 100}})
	g.Expect(Reason(err)).To(Equal(meta.LimitExceededReason))
}

// allocated returns the bytes the process allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// Each limit stops a build with LimitExceeded, naming the limit and its
// flag.
func TestLimitsStopTheBuild(t *testing.T) {
	cms := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n  k: %s\n", i, strings.Repeat("v", 100))
		}
		return b.String()
	}
	tests := []struct {
		name    string
		limits  Limits
		ctx     func() context.Context
		wantMsg string
	}{
		{name: "bytes read", limits: Limits{MaxInputBytes: 4 << 10}, wantMsg: "cms.yaml passes the limit of 4096 bytes read per render (--max-render-input)"},
		{name: "YAML nodes", limits: Limits{MaxNodes: 500}, wantMsg: "cms.yaml: reading it passes the limit of 500 YAML nodes per render, aliases expanded (--max-yaml-nodes)"},
		{name: "YAML documents", limits: Limits{MaxDocuments: 10}, wantMsg: "cms.yaml: reading it passes the limit of 10 YAML documents per render (--max-yaml-documents)"},
		{name: "output", limits: Limits{MaxOutputBytes: 1 << 10}, wantMsg: "the rendered manifests pass the limit of 1024 bytes (--max-rendered-size)"},
		{
			name: "deadline passed",
			ctx: func() context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 0)
				cancel()
				return ctx
			},
			wantMsg: "rendering did not finish within its time limit (--render-timeout)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			writeTree(t, SourceDir(work), map[string]string{"cms.yaml": cms(50)})
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			res, err := Build(ctx, work, &kustomizev1.KustomizationSpec{}, Options{Limits: tt.limits})
			g.Expect(res).To(BeNil())
			g.Expect(Reason(err)).To(Equal(meta.LimitExceededReason), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))

			// The defaults render the same tree.
			res, err = Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(50))
		})
	}
}

// Directory links cannot multiply what a build reads: a folder reached
// again through a link is refused while generating a kustomization, and a
// kustomization that lists one folder through many links pays for every
// read.
func TestLinkFanOutIsBounded(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := SourceDir(work)
	writeTree(t, src, map[string]string{"data/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: " + strings.Repeat("v", 4000) + "\n"})
	for i := 0; i < 3; i++ {
		g.Expect(os.Symlink("data", filepath.Join(src, fmt.Sprintf("link%d", i)))).To(Succeed())
	}
	_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("folder data is reached again through a link, as link0")))

	// A link cycle is refused the same way.
	cycle := t.TempDir()
	writeTree(t, SourceDir(cycle), map[string]string{"a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"})
	g.Expect(os.Symlink("..", filepath.Join(SourceDir(cycle), "a", "up"))).To(Succeed())
	_, err = Build(context.Background(), cycle, &kustomizev1.KustomizationSpec{Path: "a"}, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("is reached again through a link")))

	// Listed explicitly, with name prefixes kept apart by overlays, each
	// read counts against the byte budget.
	var k strings.Builder
	k.WriteString(kustomizationHeader + "resources:\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&k, "- o%d\n", i)
		writeTree(t, src, map[string]string{fmt.Sprintf("o%d/kustomization.yaml", i): fmt.Sprintf("%snamePrefix: p%d-\nresources:\n- ../link%d\n", kustomizationHeader, i, i)})
	}
	writeTree(t, src, map[string]string{"kustomization.yaml": k.String(), "data/kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\n"})
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(3))
	_, err = Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{Limits: Limits{MaxInputBytes: 10_000}})
	g.Expect(Reason(err)).To(Equal(meta.LimitExceededReason))
	g.Expect(err.Error()).To(ContainSubstring("--max-render-input"))
}

// A kustomization that kustomize's own decoder refuses is refused before
// kustomize runs, with the decoder's reason: the remote check reads only
// what kustomize would read, so it cannot pass over a file it failed to
// read.
func TestUnreadableKustomizationIsRefused(t *testing.T) {
	for _, tt := range []struct{ name, kustomization, wantMsg string }{
		{"a field kustomize does not know", kustomizationHeader + "resourcez:\n- cm.yaml\n", `unknown field "resourcez"`},
		{"a list where a string belongs", kustomizationHeader + "resources: cm.yaml\n", "invalid Kustomization"},
		{"not YAML", "resources: [cm.yaml\n", "kustomization.yaml: not a YAML file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			writeTree(t, SourceDir(work), map[string]string{
				"kustomization.yaml": tt.kustomization,
				"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			})
			res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(res).To(BeNil())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
			g.Expect(Reason(err)).To(Equal(kustomizev1.BuildFailedReason))
		})
	}
}

// The sandbox reads a file as kustomize reads it: objects as its reader
// makes them (documents split its way, anchors and merge keys resolved,
// Lists unwrapped), builtin configs by apiVersion, every entry of a list
// that may hold inline YAML, a file read again through a link named
// kustomization.yaml, and the kustomization's bytes as they are. Each case
// is a way a hostile tree once made kustomize fetch past the check (the
// last one only with the sandbox's rewrite of generateName); none reaches
// the server now, and plain kustomize shows each is a real fetch.
func TestRenderingNeverReachesTheNetworkReadAsKustomize(t *testing.T) {
	srv, hits := leakServer(t)
	url := srv.URL + "/leak.yaml"
	escaped := strings.Replace(url, "://", `\x3a//`, 1)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n"
	gen := "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n"
	listed := kustomizationHeader + "generators:\n- gen.yaml\n"
	for _, tt := range []struct {
		name    string
		files   map[string]string
		links   map[string]string // link → target, relative to the link's folder
		fetches bool
	}{
		{name: "kind through an alias", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           "apiVersion: builtin\nmetadata:\n  name: &k ConfigMapGenerator\nkind: *k\nfiles:\n- leaked=" + url + "\n",
		}, fetches: true},
		{name: "kind through a merge key", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           "apiVersion: builtin\n<<: {kind: ConfigMapGenerator}\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n",
		}, fetches: true},
		{name: "files through a merge key that a v2 decoder lets win", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           gen + "<<: {files: [leaked=cm.yaml]}\n",
			"cm.yaml":            cm,
		}, fetches: true},
		{name: "in a List", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           "apiVersion: v1\nkind: List\nitems:\n- " + indent(gen, "  ")[2:],
		}, fetches: true},
		{name: "in a FooList", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           "apiVersion: v1\nkind: FooList\nitems:\n- " + indent(gen, "  ")[2:],
		}, fetches: true},
		{name: "after a line kustomize splits documents on", files: map[string]string{
			"kustomization.yaml": listed,
			"gen.yaml":           gen + "---#\n",
		}, fetches: true},
		{name: "inline, after a line kustomize splits documents on", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "generators:\n- |\n" + indent(gen+"---#\n", "  "),
		}, fetches: true},
		{name: "inline on one line, behind an anchor", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "generators:\n- '&a {apiVersion: builtin, kind: ConfigMapGenerator, metadata: {name: g}, files: [\"leaked=" + escaped + "\"]}'\n",
		}, fetches: true},
		{name: "inline on one line, behind a tag", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- '!!map {apiVersion: builtin, kind: PatchTransformer, metadata: {name: p}, path: \"" + escaped + "\"}'\n",
			"cm.yaml":            cm,
		}, fetches: true},
		{name: "ValueAddTransformer targetFilePath", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- va.yaml\n",
			"cm.yaml":            cm,
			"va.yaml":            "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata:\n  name: v\nvalue: x\ntargetFilePath: " + url + "\n",
		}, fetches: true},
		{name: "a kustomization read first as a generator's data, then through a link", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "resources:\n- cm.yaml\nconfigMapGenerator:\n- name: x\n  files:\n  - d/k.yaml\ntransformers:\n- d\n",
			"cm.yaml":            cm,
			"d/k.yaml":           "resources:\n- " + url + "\n",
		}, links: map[string]string{"d/kustomization.yaml": "k.yaml"}, fetches: true},
		{name: "a folder under transformers whose patch writes a config's path", files: map[string]string{
			"kustomization.yaml":    kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- tr\n",
			"cm.yaml":               cm,
			"tr/kustomization.yaml": kustomizationHeader + "resources:\n- pt.yaml\npatches:\n- target: {kind: PatchTransformer}\n  patch: |\n    - op: replace\n      path: /path\n      value: " + url + "\n",
			"tr/pt.yaml":            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: patch.yaml\n",
		}, fetches: true},
		{name: "a folder under generators whose patch turns an object into a builtin", files: map[string]string{
			"kustomization.yaml":     kustomizationHeader + "generators:\n- gen\n",
			"gen/kustomization.yaml": kustomizationHeader + "resources:\n- g.yaml\npatches:\n- target: {kind: Foo}\n  patch: |\n    - op: replace\n      path: /kind\n      value: ConfigMapGenerator\n",
			"gen/g.yaml":             "apiVersion: builtin\nkind: Foo\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n",
		}, fetches: true},
		{name: "a folder under generators whose replacement copies a URL into a config", files: map[string]string{
			"kustomization.yaml":     kustomizationHeader + "generators:\n- gen\n",
			"gen/kustomization.yaml": kustomizationHeader + "resources:\n- g.yaml\nreplacements:\n- source: {kind: ConfigMapGenerator, name: g, fieldPath: metadata.annotations.u}\n  targets:\n  - select: {kind: ConfigMapGenerator}\n    fieldPaths: [files.0]\n",
			"gen/g.yaml":             "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\n  annotations:\n    u: leaked=" + url + "\nfiles:\n- leaked=local.txt\n",
			"gen/local.txt":          "x",
		}, fetches: true},
		{name: "a kustomization with a generateName object after it", files: map[string]string{
			"kustomization.yaml": kustomizationHeader + "resources:\n- " + url + "\n<<: {resources: [cm.yaml]}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x\n",
			"cm.yaml":            cm,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			src := SourceDir(work)
			writeTree(t, src, tt.files)
			for link, target := range tt.links {
				g.Expect(os.Symlink(target, filepath.Join(src, filepath.FromSlash(link)))).To(Succeed())
			}
			hits.Store(0)
			res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(hits.Load()).To(BeZero(), "the server was reached: %v", err)
			if tt.fetches {
				g.Expect(err).To(HaveOccurred(), "rendered: %v", res)
			}
			if tt.fetches {
				plainKustomize(src)
				g.Expect(hits.Load()).To(BeNumerically(">", 0), "plain kustomize does not fetch this case: not a vector")
			}
		})
	}
}

// Objects of kind Kustomization or Component that are not kustomizations
// (Plumb's and Flux's Kustomizations in an app-of-apps folder, a Dapr
// Component), as resources, in a folder without a kustomization and in an
// inline patch, render as any object does.
func TestKustomizationObjectsAreResources(t *testing.T) {
	plumb := "apiVersion: kustomize.plumb.dev/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n  interval: 10m\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: apps\n"
	flux := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  interval: 10m\n  path: ./infra\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	dapr := "apiVersion: dapr.io/v1alpha1\nkind: Component\nmetadata:\n  name: statestore\nspec:\n  type: state.redis\n  version: v1\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"listed as resources", map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- apps.yaml\n- c.yaml\n", "apps.yaml": plumb + "---\n" + flux, "c.yaml": dapr}, 3},
		{"in a folder without a kustomization", map[string]string{"apps.yaml": plumb + "---\n" + flux, "c.yaml": dapr}, 3},
		{"patched inline", map[string]string{"kustomization.yaml": kustomizationHeader + "resources:\n- apps.yaml\npatches:\n- patch: |\n" + indent("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  interval: 5m\n", "    "), "apps.yaml": flux}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			writeTree(t, SourceDir(work), tt.files)
			res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(tt.want))
		})
	}
}

// A folder under transformers whose kustomization only lists files is
// used as kustomize uses it: its configs transform the build.
func TestPluginFolderThatListsFilesRenders(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	writeTree(t, SourceDir(work), map[string]string{
		"kustomization.yaml":    kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- tr\n",
		"cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
		"tr/kustomization.yaml": kustomizationHeader + "resources:\n- labels.yaml\n",
		"tr/labels.yaml":        "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\nlabels:\n  team: blue\nfieldSpecs:\n- path: metadata/labels\n  create: true\n",
	})
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))
	g.Expect(string(res.Manifests)).To(ContainSubstring("team: blue"))
}
