package render

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// jsonnetCLI builds the jsonnet CLI of the go-jsonnet module this package
// uses (the module graph of plumb.dev/pkg picks the version), once, the
// first time a test needs it; TestMain removes its folder (jsonnetDir).
var (
	jsonnetDir string
	jsonnetCLI = sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "plumb-jsonnet-cli-")
		if err != nil {
			return "", err
		}
		jsonnetDir = dir
		bin := filepath.Join(dir, "jsonnet")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/google/go-jsonnet/cmd/jsonnet").CombinedOutput()
		if err != nil {
			return "", &exec.ExitError{Stderr: out}
		}
		return bin, nil
	})
)

// TestMain removes the jsonnet CLI's folder if a test built it, whether
// the build succeeded or not, and builds nothing when no test needed it.
func TestMain(m *testing.M) {
	code := m.Run()
	if jsonnetDir != "" {
		os.RemoveAll(jsonnetDir)
	}
	os.Exit(code)
}

// cliObjects runs the jsonnet CLI on file in dir with args and returns the
// objects of its output: the elements of an array, or the object.
func cliObjects(t *testing.T, dir, file string, args ...string) []map[string]any {
	t.Helper()
	bin, err := jsonnetCLI()
	if err != nil {
		t.Fatalf("building the jsonnet CLI: %v", err)
	}
	cmd := exec.Command(bin, append(args, file)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jsonnet %s: %v: %s", file, err, stderr.String())
	}
	var arr []map[string]any
	if err := yaml.Unmarshal(out, &arr); err == nil {
		return arr
	}
	var obj map[string]any
	if err := yaml.Unmarshal(out, &obj); err != nil {
		t.Fatalf("jsonnet %s printed neither an array nor an object: %v", file, err)
	}
	return []map[string]any{obj}
}

// renderedObjects parses a build's manifests into objects, keyed by kind
// and name.
func renderedObjects(t *testing.T, manifests []byte) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(string(manifests), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("parsing the manifests: %v", err)
		}
		objs[objectKey(o)] = o
	}
	return objs
}

func objectKey(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	return o["kind"].(string) + "/" + md["name"].(string)
}

// TestJsonnetRendersAsTheJsonnetCLI renders Argo CD's jsonnet examples and
// compares the objects with what the jsonnet CLI of the same go-jsonnet
// module prints for the same file and arguments, after YAML parsing.
func TestJsonnetRendersAsTheJsonnetCLI(t *testing.T) {
	cases := []struct {
		name    string
		path    string
		jsonnet *kustomizev1.Jsonnet
		cliArgs []string
		want    []string // the rendered objects' kind/name
	}{
		{
			name: "jsonnet-guestbook, without spec.jsonnet",
			path: "jsonnet-guestbook",
			want: []string{"Service/jsonnet-guestbook-ui", "Deployment/jsonnet-guestbook-ui"},
		},
		{
			name:    "jsonnet-guestbook-tla, defaults",
			path:    "jsonnet-guestbook-tla",
			jsonnet: &kustomizev1.Jsonnet{},
			want:    []string{"Service/jsonnet-guestbook-ui", "Deployment/jsonnet-guestbook-ui"},
		},
		{
			name: "jsonnet-guestbook-tla, string and code arguments",
			path: "jsonnet-guestbook-tla",
			jsonnet: &kustomizev1.Jsonnet{TLAs: []kustomizev1.JsonnetVar{
				{Name: "name", Value: "tla-guestbook"},
				{Name: "replicas", Value: "1 + 2", Code: true},
				{Name: "type", Value: "ClusterIP"},
			}},
			cliArgs: []string{"--tla-str", "name=tla-guestbook", "--tla-code", "replicas=1 + 2", "--tla-str", "type=ClusterIP"},
			want:    []string{"Service/tla-guestbook", "Deployment/tla-guestbook"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			work := workspace(t, "jsonnet/argocd")
			res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{Path: tc.path, Jsonnet: tc.jsonnet}, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			got := renderedObjects(t, res.Manifests)
			g.Expect(got).To(HaveLen(len(tc.want)))
			want := cliObjects(t, filepath.Join(SourceDir(work), tc.path), "guestbook-ui.jsonnet", tc.cliArgs...)
			g.Expect(want).To(HaveLen(len(tc.want)))
			for _, o := range want {
				g.Expect(tc.want).To(ContainElement(objectKey(o)))
				g.Expect(got[objectKey(o)]).To(Equal(o), objectKey(o))
			}
		})
	}
}

// TestJsonnetExtVarsAndLibs covers std.extVar (string and code), an
// import found through spec.jsonnet.libs, importstr, a kind: List, and
// the spec's own fields applied to the objects of a .jsonnet file.
func TestJsonnetExtVarsAndLibs(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	src := mkSource(t, work)
	writeFiles(t, src, map[string]string{
		"lib/k8s.libsonnet": `{ configMap(name, data):: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: name }, data: data } }`,
		"app/motd.txt":      "hello\n",
		"app/main.jsonnet": `local k = import "k8s.libsonnet";
{
  apiVersion: "v1",
  kind: "List",
  items: [
    k.configMap(std.extVar("name"), { motd: importstr "motd.txt", replicas: std.toString(std.extVar("replicas")) }),
    k.configMap("second", { n: "2" }),
  ],
}`,
		"app/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
		// Not evaluated: only the .jsonnet files of path itself are.
		"app/vendor/other.jsonnet": `error "never evaluated"`,
	})
	spec := &kustomizev1.KustomizationSpec{
		Path:       "app",
		NamePrefix: "x-",
		Jsonnet: &kustomizev1.Jsonnet{
			ExtVars: []kustomizev1.JsonnetVar{{Name: "name", Value: "first"}, {Name: "replicas", Value: "{a: 1}.a + 2", Code: true}},
			Libs:    []string{"lib"},
		},
	}
	res, err := Build(context.Background(), work, spec, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	objs := renderedObjects(t, res.Manifests)
	g.Expect(objs).To(HaveKey("ConfigMap/x-first"))
	g.Expect(objs).To(HaveKey("ConfigMap/x-second"))
	g.Expect(objs).To(HaveKey("ConfigMap/x-plain"))
	g.Expect(objs).To(HaveLen(3))
	g.Expect(objs["ConfigMap/x-first"]["data"]).To(Equal(map[string]any{"motd": "hello\n", "replicas": "3"}))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
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

// TestJsonnetFailures: each input fails the build with its reason and a
// message naming the cause.
func TestJsonnetFailures(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		links   map[string]string // link name → target
		spec    kustomizev1.KustomizationSpec
		limits  Limits
		reason  string
		message []string
	}{
		{
			name:    "unbounded recursion",
			files:   map[string]string{"main.jsonnet": "local f(x) = f(x + 1); f(0)"},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{"evaluating main.jsonnet", "max stack frames exceeded", "main.jsonnet:1:"},
		},
		{
			name:    "output past the rendered size limit",
			files:   map[string]string{"main.jsonnet": `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "big"}, data: {x: std.join("", std.makeArray(5000, function(i) "0123456789"))}}`},
			limits:  Limits{MaxOutputBytes: 20_000},
			reason:  meta.LimitExceededReason,
			message: []string{"main.jsonnet evaluates to more than the limit of 20000 bytes (--max-rendered-size)"},
		},
		{
			name:    "import of an absolute path",
			files:   map[string]string{"main.jsonnet": `import "/etc/passwd"`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`import "/etc/passwd" refused: imports name files inside the source by a relative path`},
		},
		{
			name:    "importstr leaving the source by ..",
			files:   map[string]string{"app/main.jsonnet": `importstr "../../../../etc/passwd"`},
			spec:    kustomizev1.KustomizationSpec{Path: "app"},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`import "../../../../etc/passwd" refused: ../../../etc/passwd is outside the source`},
		},
		{
			name:    "importbin through a link out of the source",
			files:   map[string]string{"main.jsonnet": `importbin "passwd"`},
			links:   map[string]string{"passwd": "/etc/passwd"},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`import "passwd" refused: passwd is a link that leads outside the source or nowhere`},
		},
		{
			name:    "an import not found",
			files:   map[string]string{"main.jsonnet": `import "missing.libsonnet"`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`import "missing.libsonnet": not found beside main.jsonnet or in spec.jsonnet.libs`},
		},
		{
			name:    "no native functions",
			files:   map[string]string{"main.jsonnet": `std.native("parseYaml")("a: 1")`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{"evaluating main.jsonnet", "expected function"},
		},
		{
			name:    "a string output",
			files:   map[string]string{"main.jsonnet": `"text"`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{"main.jsonnet evaluates to a string; a Jsonnet file must evaluate to an object, an array of objects or a kind: List"},
		},
		{
			name:    "an array of numbers",
			files:   map[string]string{"main.jsonnet": `[{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "a"}}, 2]`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{"main.jsonnet: element 2 of the array is a number, not an object"},
		},
		{
			name:    "an object without a name",
			files:   map[string]string{"main.jsonnet": `{apiVersion: "v1", kind: "ConfigMap"}`},
			reason:  kustomizev1.ValidationFailedReason,
			message: []string{"main.jsonnet (document 1): v1 ConfigMap has no metadata.name"},
		},
		{
			name: "the same object from a .jsonnet and a YAML file",
			files: map[string]string{
				"a.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n",
				"main.jsonnet": `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "same"}}`,
			},
			reason:  kustomizev1.ValidationFailedReason,
			message: []string{"duplicate object ConfigMap default/same: defined in a.yaml (document 1) and in main.jsonnet (document 1)"},
		},
		{
			name:    "a long error is cut",
			files:   map[string]string{"main.jsonnet": `error std.repeat("x\u0007", 100000)`},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{"RUNTIME ERROR: x\uFFFDx", "more bytes)"},
		},
		{
			name: "spec.jsonnet with a kustomization file",
			files: map[string]string{
				"kustomization.yaml": "resources: [cm.yaml]\n",
				"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
				"main.jsonnet":       `{}`,
			},
			spec:    kustomizev1.KustomizationSpec{Jsonnet: &kustomizev1.Jsonnet{}},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`spec.jsonnet is set, but path "./" has a kustomization file`},
		},
		{
			name:    "spec.jsonnet without .jsonnet files",
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"},
			spec:    kustomizev1.KustomizationSpec{Jsonnet: &kustomizev1.Jsonnet{}},
			reason:  kustomizev1.BuildFailedReason,
			message: []string{`spec.jsonnet is set, but path "./" holds no .jsonnet file`},
		},
		{
			name:    "imports count in the input budget",
			files:   map[string]string{"main.jsonnet": `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x"}, data: {s: importstr "big.txt"}}`, "big.txt": strings.Repeat("x", 10_000)},
			limits:  Limits{MaxInputBytes: 5_000},
			reason:  meta.LimitExceededReason,
			message: []string{"big.txt"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			src := mkSource(t, work)
			writeFiles(t, src, tc.files)
			for name, target := range tc.links {
				g.Expect(os.Symlink(target, filepath.Join(src, name))).To(Succeed())
			}
			_, err := Build(context.Background(), work, &tc.spec, Options{Limits: tc.limits})
			g.Expect(err).To(HaveOccurred())
			g.Expect(Reason(err)).To(Equal(tc.reason), err.Error())
			for _, m := range tc.message {
				g.Expect(err.Error()).To(ContainSubstring(m))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(work), "the message names files as the source does")
			g.Expect(len(err.Error())).To(BeNumerically("<", 3000))
		})
	}
}

// TestJsonnetKustomizationFolderIgnoresJsonnetFiles: a folder with a
// kustomization file is kustomize's, whatever .jsonnet files it holds.
func TestJsonnetKustomizationFolderIgnoresJsonnetFiles(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	writeFiles(t, mkSource(t, work), map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"main.jsonnet":       `error "not evaluated"`,
	})
	res, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renderedObjects(t, res.Manifests)).To(HaveKey("ConfigMap/cm"))
}

// TestJsonnetStopsAtTheDeadline: go-jsonnet takes no context, so Build
// abandons an evaluation when its context ends (in a render worker the
// process is then killed; pkg/renderworker tests that). The recursion
// here is 2^22 calls deep by at most 23 frames: seconds of work in little
// memory, far past the deadline, and then done.
func TestJsonnetStopsAtTheDeadline(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	writeFiles(t, mkSource(t, work), map[string]string{
		"main.jsonnet": `local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "n"}, data: {n: std.toString(f(22))}}`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Build(ctx, work, &kustomizev1.KustomizationSpec{}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(Reason(err)).To(Equal(meta.LimitExceededReason), err.Error())
}

// TestJsonnetSharedBuildsKeyOnTheVariables: two builds of one tree with
// other variables are two outputs, not one shared.
func TestJsonnetSharedBuildsKeyOnTheVariables(t *testing.T) {
	g := NewWithT(t)
	work := t.TempDir()
	writeFiles(t, mkSource(t, work), map[string]string{
		"main.jsonnet": `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: std.extVar("n")}}`,
	})
	shared := NewSharedBuilds(0)
	for _, name := range []string{"a", "b", "a", "b"} {
		spec := &kustomizev1.KustomizationSpec{Jsonnet: &kustomizev1.Jsonnet{ExtVars: []kustomizev1.JsonnetVar{{Name: "n", Value: name}}}}
		res, err := Build(context.Background(), work, spec, Options{Shared: shared})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(renderedObjects(t, res.Manifests)).To(HaveKey("ConfigMap/" + name))
	}
}
