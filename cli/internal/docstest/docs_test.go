package docstest

import (
	"bufio"
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"plumb.dev/cli/internal/cmd"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

// otherToolsFlags are the flags of other tools that the docs name, each
// with the tool. Keep it short: a flag of Plumb's belongs in the code.
var otherToolsFlags = map[string]string{
	"show-status":            "flux debug kustomization --show-status",
	"show-history":           "flux debug helmrelease --show-history",
	"from-literal":           "kubectl create secret --from-literal",
	"overwrite":              "kubectl annotate --overwrite",
	"server-side":            "kubectl apply --server-side",
	"init":                   "git submodule update --init",
	"recursive":              "git submodule update --recursive",
	"include-crds":           "helm template --include-crds",
	"set":                    "helm template --set",
	"set-string":             "helm template --set-string",
	"install":                "helm upgrade --install",
	"no-hooks":               "helm upgrade --no-hooks",
	"cleanup-on-fail":        "helm upgrade --cleanup-on-fail",
	"skip-schema-validation": "helm upgrade --skip-schema-validation",
	"filter":                 "helm test --filter",
	"format":                 "git archive --format",
	"armor":                  "gpg --armor",
	"export-secret-keys":     "gpg --export-secret-keys",
	"fingerprint":            "gpg --fingerprint",
	"key":                    "cosign sign --key",
	"new-bundle-format":      "cosign sign --new-bundle-format",
	"tls":                    "nats-server --tls",
	"tlscert":                "nats-server --tlscert",
	"tlskey":                 "nats-server --tlskey",
	"insecure-allow-http":    "Flux's source-controller, which Plumb's docs compare with",
	"enable-k8s-event":       "Argo CD's application controller, which docs/design/events.md compares with",
	"event-ttl":              "kube-apiserver --event-ttl",
}

// otherKinds are kinds of other projects that the docs name, each with the
// project. Kind is the placeholder of `Kind/name`.
var otherKinds = map[string]string{
	"Kind":        "a placeholder",
	"Bundle":      "trust-manager, in docs/api/externalartifact.md's example",
	"Certificate": "cert-manager, in docs/design/health-expressions.md's example",
}

// programDirs hold the Go source of the programs whose flags the AST
// reading collects, relative to the repository root: the controllers, the
// ui server, plumb-local, and pkg. The shared flag sets of pkg/options are
// also bound in process (sharedFlags).
// Benchmark programs (bench/) are not Plumb's programs.
var programDirs = []string{
	"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller",
	"ui", "e2e/cmd", "pkg",
}

// A docLine is one line of documentation.
type docLine struct {
	path   string // relative to the repository root
	n      int
	text   string
	fenced bool // inside a ``` block of Markdown
}

func (l docLine) String() string { return l.path + ":" + strconv.Itoa(l.n) }

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	flagRE     = regexp.MustCompile(`(?:^|[\s=\[(])--([a-z][a-z0-9-]*[a-z0-9])(-\*)?`)
	kindPathRE = regexp.MustCompile(`^([A-Z][a-z][A-Za-z0-9]*)/`)
	yamlKindRE = regexp.MustCompile(`^\s*(?:- )?kind: ([A-Za-z][A-Za-z0-9]*)\s*$`)
	kindWordRE = regexp.MustCompile("`([A-Z][a-z][A-Za-z0-9]*)`")
	// kindFieldRE is an API page's table row of a field named kind, or
	// the words "`kind` (…)" that list a field's kinds.
	kindFieldRE = regexp.MustCompile("^\\| `[A-Za-z.\\[\\]]*kind` \\| ([^|]*)\\||`kind` \\(([^)]*)\\)")
)

// TestDocsNameOnlyFlagsTheProgramsHave checks every `--flag` of the docs.
func TestDocsNameOnlyFlagsTheProgramsHave(t *testing.T) {
	root := repoRoot(t)
	flags := astFlags(t, root)
	for f := range cliFlags(t) {
		flags[f] = true
	}
	for f := range sharedFlags() {
		flags[f] = true
	}
	if !flags["nats-url"] || !flags["kubeconfig"] || !flags["path"] {
		t.Fatalf("the flags read miss --nats-url, --kubeconfig or --path: is the test reading the right code? %d flags", len(flags))
	}
	usedOther := map[string]bool{}
	for _, l := range docLines(t, root) {
		if l.fenced {
			continue
		}
		for _, span := range codeSpanRE.FindAllStringSubmatch(l.text, -1) {
			for _, m := range flagRE.FindAllStringSubmatch(span[1], -1) {
				name, prefix := m[1], m[2] != ""
				switch {
				case prefix && hasPrefix(flags, name+"-"):
				case !prefix && flags[name]:
				case !prefix && otherToolsFlags[name] != "":
					usedOther[name] = true
				default:
					t.Errorf("%s: `--%s%s` is a flag of none of Plumb's programs: fix the doc, or the code (another tool's flag goes in otherToolsFlags)",
						l, name, m[2])
				}
			}
		}
	}
	for name, tool := range otherToolsFlags {
		switch {
		case flags[name]:
			t.Errorf("otherToolsFlags: --%s (%s) is a flag of Plumb's own now: remove it from the list", name, tool)
		case !usedOther[name]:
			t.Errorf("otherToolsFlags: no doc names --%s (%s) any more: remove it from the list", name, tool)
		}
	}
}

// TestDocsNameOnlyKindsThatExist checks the kinds the docs name.
func TestDocsNameOnlyKindsThatExist(t *testing.T) {
	root := repoRoot(t)
	plumbKinds, kinds := knownKinds(t)
	usedOther := map[string]bool{}
	check := func(l docLine, kind, how string) {
		if otherKinds[kind] != "" {
			usedOther[kind] = true
		}
		if !kinds[kind] && otherKinds[kind] == "" {
			t.Errorf("%s: %s: %q is a kind of neither Plumb's API groups nor Kubernetes: fix the doc (another project's kind goes in otherKinds)",
				l, how, kind)
		}
	}
	for _, l := range docLines(t, root) {
		if m := yamlKindRE.FindStringSubmatch(l.text); m != nil && (l.fenced || strings.HasSuffix(l.path, ".go")) {
			check(l, m[1], "kind:")
		}
		if l.fenced {
			continue
		}
		for _, span := range codeSpanRE.FindAllStringSubmatch(l.text, -1) {
			if m := kindPathRE.FindStringSubmatch(span[1]); m != nil {
				check(l, m[1], "`"+m[1]+"/…`")
			}
		}
		if strings.HasPrefix(l.path, "docs/api/") {
			for _, m := range kindFieldRE.FindAllStringSubmatch(l.text, -1) {
				for _, w := range kindWordRE.FindAllStringSubmatch(m[1]+m[2], -1) {
					check(l, w[1], "the kind field's value")
				}
			}
		}
	}

	for kind, project := range otherKinds {
		if !usedOther[kind] {
			t.Errorf("otherKinds: no doc names %s (%s) any more: remove it from the list", kind, project)
		}
	}

	// docs/api/README.md's table lists Plumb's kinds, all of them.
	listed := map[string]bool{}
	rowRE := regexp.MustCompile(`^\| ([A-Z][A-Za-z]+) \| ([a-z.]+)/(v[0-9a-z]+) \|`)
	for _, l := range docLines(t, root) {
		if l.path != "docs/api/README.md" {
			continue
		}
		if m := rowRE.FindStringSubmatch(l.text); m != nil {
			listed[m[1]] = true
			if gv := plumbKinds[m[1]]; gv != m[2]+"/"+m[3] {
				t.Errorf("%s: the table lists %s in %s/%s; Plumb's API has it in %q", l, m[1], m[2], m[3], gv)
			}
		}
	}
	for k := range plumbKinds {
		if !listed[k] {
			t.Errorf("docs/api/README.md: the table of kinds misses %s", k)
		}
	}
}

// docLines returns the lines of README.md, deploy/README.md, docs/**/*.md
// and the comment lines of every doc.go.
func docLines(t *testing.T, root string) []docLine {
	t.Helper()
	paths := []string{"README.md", "deploy/README.md"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasPrefix(rel, "docs/") && strings.HasSuffix(rel, ".md")) || d.Name() == "doc.go" {
			paths = append(paths, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []docLine
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		goFile := strings.HasSuffix(p, ".go")
		fenced := false
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			text := sc.Text()
			if goFile {
				c, ok := strings.CutPrefix(strings.TrimSpace(text), "//")
				if !ok {
					continue
				}
				text = c
			} else if strings.HasPrefix(strings.TrimSpace(text), "```") {
				fenced = !fenced
				continue
			}
			out = append(out, docLine{path: p, n: n, text: text, fenced: fenced})
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return out
}

// flagDefiners are the methods (and functions) of pflag's and flag's
// FlagSets that define a flag, by the index of their name argument.
func flagNameArg(method string) (int, bool) {
	switch method {
	case "Func", "BoolFunc", "TextVar":
		if method == "TextVar" {
			return 1, true
		}
		return 0, true
	case "Var", "VarP", "VarPF":
		return 1, true
	}
	base := strings.TrimSuffix(method, "P")
	typ, isVar := strings.CutSuffix(base, "Var")
	switch typ {
	case "String", "Bool", "Int", "Int8", "Int16", "Int32", "Int64", "Uint", "Uint8", "Uint16", "Uint32", "Uint64",
		"Float32", "Float64", "Duration", "StringSlice", "StringArray", "StringToString", "StringToInt",
		"IntSlice", "Int64Slice", "UintSlice", "BoolSlice", "DurationSlice", "Float64Slice", "IP", "IPSlice",
		"IPMask", "IPNet", "BytesHex", "BytesBase64", "Count":
		if isVar {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// astFlags reads the flag definitions of the programs' Go source: calls of
// a FlagSet's (or the flag packages') definers, in files that import pflag
// or flag, whose name is a string literal or a string constant.
func astFlags(t *testing.T, root string) map[string]bool {
	t.Helper()
	type call struct {
		pos  token.Position
		name ast.Expr
	}
	var calls []call
	consts := map[string][]string{} // constant name -> values
	fset := token.NewFileSet()
	for _, dir := range programDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "testdata", "bench", "node_modules":
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								v, _ := strconv.Unquote(lit.Value)
								consts[n.Name] = append(consts[n.Name], v)
							}
						}
					}
				}
			}
			if !slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool {
				return s.Path.Value == `"github.com/spf13/pflag"` || s.Path.Value == `"flag"`
			}) {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := c.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				i, ok := flagNameArg(sel.Sel.Name)
				if !ok || i >= len(c.Args) || len(c.Args) < 2 {
					return true
				}
				calls = append(calls, call{fset.Position(c.Pos()), c.Args[i]})
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	flags := map[string]bool{}
	for _, c := range calls {
		var values []string
		switch e := c.name.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				v, _ := strconv.Unquote(e.Value)
				values = []string{v}
			}
		case *ast.Ident:
			values = consts[e.Name]
		case *ast.SelectorExpr:
			values = consts[e.Sel.Name]
		}
		if len(values) == 0 {
			// Not a flag definer after all (a method of the same name
			// elsewhere), or a name the test cannot read.
			continue
		}
		for _, v := range values {
			flags[v] = true
		}
	}
	return flags
}

// sharedFlags binds pkg/options' flag sets, which the programs share, in
// process: they include flags that Flux's libraries define (leader
// election, logging), which the AST reading cannot see.
func sharedFlags() map[string]bool {
	fs := pflag.NewFlagSet("shared", pflag.ContinueOnError)
	var (
		mgr     options.Manager
		nats    options.NATS
		reader  options.NATS
		storage options.Storage
		rec     options.Reconcile
	)
	mgr.BindFlags(fs)
	nats.BindFlags(fs)
	storage.BindFlags(fs)
	rec.BindFlags(fs)
	readers := pflag.NewFlagSet("reader", pflag.ContinueOnError)
	reader.BindReaderFlags(readers)
	flags := map[string]bool{}
	for _, set := range []*pflag.FlagSet{fs, readers} {
		set.VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
	}
	return flags
}

// cliFlags runs `plumb [command…] --help` for every command of the CLI,
// in process, and returns the flags the help lists.
func cliFlags(t *testing.T) map[string]bool {
	t.Helper()
	flagLine := regexp.MustCompile(`^\s+(?:-[A-Za-z0-9], )?--([a-z0-9][a-z0-9-]*)`)
	commandLine := regexp.MustCompile(`^\s+([a-z][a-z0-9-]*)\s`)
	flags := map[string]bool{}
	queue := [][]string{nil}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		var out, errOut bytes.Buffer
		if code := cmd.Run(context.Background(), append(slices.Clone(path), "--help"), &out, &errOut); code != cmd.ExitOK {
			t.Fatalf("plumb %s --help: exit %d: %s", strings.Join(path, " "), code, errOut.String())
		}
		section := ""
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
				section = line
				continue
			}
			switch section {
			case "Available Commands:", "Additional Commands:":
				if m := commandLine.FindStringSubmatch(line); m != nil && m[1] != "help" {
					queue = append(queue, append(slices.Clone(path), m[1]))
				}
			case "Flags:", "Global Flags:":
				if m := flagLine.FindStringSubmatch(line); m != nil {
					flags[m[1]] = true
				}
			}
		}
	}
	return flags
}

// knownKinds returns Plumb's kinds, each with its group/version, and every
// kind Plumb's and Kubernetes' API groups (the controllers' scheme and the
// CustomResourceDefinition's) have.
func knownKinds(t *testing.T) (plumb map[string]string, all map[string]bool) {
	t.Helper()
	scheme := app.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	plumb, all = map[string]string{}, map[string]bool{}
	for gvk, typ := range scheme.AllKnownTypes() {
		all[gvk.Kind] = true
		if strings.HasPrefix(typ.PkgPath(), "plumb.dev/api/") && !strings.HasSuffix(gvk.Kind, "List") {
			plumb[gvk.Kind] = gvk.GroupVersion().String()
		}
	}
	if len(plumb) < 8 || !all["Deployment"] {
		t.Fatalf("the scheme has %d of Plumb's kinds, Deployment %v", len(plumb), all["Deployment"])
	}
	return plumb, all
}

func hasPrefix(set map[string]bool, prefix string) bool {
	for k := range set {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// repoRoot is the folder holding go.work, above the test's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's folder")
		}
		dir = parent
	}
}
