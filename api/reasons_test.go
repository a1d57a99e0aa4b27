// Package api_test checks that the condition and event reasons of Plumb's
// APIs have one source: the constants in this module. Every constant named
// ...Reason is listed in the Reasons table of its kind's page in docs/api,
// every reason listed there is such a constant and is used by a controller,
// no controller passes a reason as a string literal, and the reasons the
// other docs name in prose (README.md, deploy/README.md, docs/**/*.md and
// every doc.go) are such constants too. It reads the Go files and the
// Markdown as text; it needs no cluster.
package api_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// groups are the packages of this module that hold reasons, by the import
// alias the code base gives them, with the docs/api pages that may list
// them (none: any page, for the shared reasons of api/meta).
var groups = []struct {
	dir, alias string
	pages      []string
}{
	{"meta", "meta", nil},
	{"source/v1", "sourcev1", []string{"gitrepository.md", "helmrepository.md", "helmchart.md", "ocirepository.md", "bucket.md"}},
	{"sourceext/v1beta1", "sourceextv1beta1", []string{"artifactgenerator.md"}},
	{"kustomize/v1", "kustomizev1", []string{"kustomization.md"}},
	{"helm/v2", "helmv2", []string{"helmrelease.md"}},
	{"notification/v1", "notificationv1", []string{"alert.md", "provider.md", "receiver.md"}},
	{"image/v1", "imagev1", []string{"imagerepository.md", "imagepolicy.md", "imageupdateautomation.md"}},
	{"set/v1", "setv1", []string{"objectset.md"}},
}

// codeDirs hold the code that sets conditions and records events, relative
// to this module.
var codeDirs = []string{
	"../source-controller", "../render-controller", "../sync-controller",
	"../notification-controller", "../image-controller", "../pkg", "../cli",
}

const docsDir = "../docs/api"

// reasonConst is one constant named ...Reason.
type reasonConst struct {
	alias, name, value string
	pages              []string
	pos                string
}

func (c reasonConst) qualified() string { return c.alias + "." + c.name }

// docRow is one row of a Reasons table.
type docRow struct {
	page, value, constant string
	line                  int
}

func TestEveryReasonConstantIsDocumented(t *testing.T) {
	consts := reasonConstants(t)
	rows := docRows(t)
	for _, c := range consts {
		var pages []string
		for _, r := range rows {
			if r.constant == c.qualified() && r.value == c.value {
				pages = append(pages, r.page)
			}
		}
		switch {
		case len(pages) == 0:
			t.Errorf("%s (%q, %s) is in no Reasons table of docs/api: add a row | `%s` | `%s` | where | meaning |",
				c.qualified(), c.value, c.pos, c.value, c.qualified())
		case c.pages != nil && !slices.ContainsFunc(pages, func(p string) bool { return slices.Contains(c.pages, p) }):
			t.Errorf("%s is listed on %v, not on its kind's page (%v)", c.qualified(), pages, c.pages)
		}
	}
}

func TestEveryDocumentedReasonIsAConstantInUse(t *testing.T) {
	consts := map[string]reasonConst{}
	for _, c := range reasonConstants(t) {
		consts[c.qualified()] = c
	}
	used := usedReasons(t)
	for _, r := range docRows(t) {
		c, ok := consts[r.constant]
		switch {
		case !ok:
			t.Errorf("%s:%d: %s names no reason constant in api/", r.page, r.line, r.constant)
		case c.value != r.value:
			t.Errorf("%s:%d: %s is %q, not %q", r.page, r.line, r.constant, c.value, r.value)
		case !used[r.constant]:
			t.Errorf("%s:%d: no controller uses %s (%q): a dead reason; remove it from the docs and api/", r.page, r.line, r.constant, r.value)
		}
	}
	for _, c := range consts {
		if !used[c.qualified()] {
			t.Errorf("%s (%s) is used by no code outside api/: remove it, or use it", c.qualified(), c.pos)
		}
	}
}

// proseReasonRE finds the reasons that documentation names in prose:
// "reason `X`", "`X` event", and a condition's status followed by its
// reason, "Ready=False, `X`" or "Ready=False X".
var proseReasonRE = regexp.MustCompile("[Rr]easons? `([A-Z][A-Za-z]+)`|`([A-Z][A-Za-z]+)` events?\\b|[A-Z][A-Za-z]+=(?:True|False|Unknown)(?:,? `([A-Z][A-Za-z]+)`| ([A-Z][a-z]+[A-Z][A-Za-z]+))")

// TestDocsNameOnlyReasonsTheAPIHas reads the reasons named in the prose of
// every doc: each must be the value of a reason constant in api/.
func TestDocsNameOnlyReasonsTheAPIHas(t *testing.T) {
	values := map[string]bool{}
	for _, c := range reasonConstants(t) {
		values[c.value] = true
	}
	found := 0
	for _, doc := range proseDocs(t) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(doc, ".go") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, m := range proseReasonRE.FindAllStringSubmatch(line, -1) {
				reason := m[1] + m[2] + m[3] + m[4]
				found++
				if !values[reason] {
					t.Errorf("%s:%d: names the reason %s, which no reason constant in api/ has: fix the doc, or the code",
						strings.TrimPrefix(doc, "../"), n+1, reason)
				}
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d reasons named in the docs: is the test reading the right files?", found)
	}
}

// proseDocs returns README.md, deploy/README.md, docs/**/*.md and every
// doc.go of the repository, relative to this module.
func proseDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"../README.md", "../deploy/README.md"}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasPrefix(p, "../docs/") && strings.HasSuffix(p, ".md")) || d.Name() == "doc.go" {
			docs = append(docs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestReasonValuesAreUnique(t *testing.T) {
	byValue := map[string][]string{}
	for _, c := range reasonConstants(t) {
		byValue[c.value] = append(byValue[c.value], c.qualified())
	}
	for v, names := range byValue {
		if len(names) > 1 {
			t.Errorf("reason %q has %d constants, %v: keep one (a shared reason goes to api/meta)", v, len(names), names)
		}
	}
}

func TestControllersNameReasonsByConstant(t *testing.T) {
	for _, dir := range codeDirs {
		eachGoFile(t, dir, func(fset *token.FileSet, f *ast.File) {
			// Flux's conditions helpers, or any package named conditions
			// that takes their place.
			reconcilePkg := importName(f, "plumb.dev/pkg/reconcile")
			conditionsPkg := importNameBySuffix(f, "/conditions")
			ast.Inspect(f, func(n ast.Node) bool {
				var reason ast.Expr
				switch n := n.(type) {
				case *ast.CallExpr:
					reason = reasonArg(n, reconcilePkg, conditionsPkg)
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && (k.Name == "Reason" || k.Name == "reason") {
						reason = n.Value
					}
				}
				if lit, ok := reason.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: reason %s is a string literal: name it by a constant in api/ (and list it in docs/api)",
						fset.Position(lit.Pos()), lit.Value)
				}
				return true
			})
		})
	}
}

// reasonArg returns the argument of call that is a reason, if call is one
// of the calls that take one: an event recorder's Record, Eventf and
// RecordOnStream, the conditions helpers, pkg/reconcile's Stalled and
// Waiting, sync-controller's failed.
func reasonArg(call *ast.CallExpr, reconcilePkg, conditionsPkg string) ast.Expr {
	arg := func(i int) ast.Expr {
		if i < len(call.Args) {
			return call.Args[i]
		}
		return nil
	}
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		if fun.Name == "failed" {
			return arg(0)
		}
	case *ast.SelectorExpr:
		x, _ := fun.X.(*ast.Ident)
		switch name := fun.Sel.Name; {
		case (name == "Record" || name == "Eventf") && len(call.Args) >= 4:
			return arg(2)
		case name == "RecordOnStream" && len(call.Args) >= 3:
			return arg(1)
		case x != nil && x.Name == conditionsPkg && (name == "MarkTrue" || name == "MarkFalse" || name == "MarkUnknown"):
			return arg(2)
		case x != nil && x.Name == conditionsPkg && (name == "MarkStalled" || name == "MarkReconciling"):
			return arg(1)
		case x != nil && x.Name == reconcilePkg && (name == "Stalled" || name == "Waiting"):
			return arg(0)
		}
	}
	return nil
}

// reasonConstants parses the groups' Go files for string constants named
// ...Reason.
func reasonConstants(t *testing.T) []reasonConst {
	t.Helper()
	var out []reasonConst
	for _, g := range groups {
		entries, err := os.ReadDir(g.dir)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(g.dir, e.Name()), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !strings.HasSuffix(n.Name, "Reason") || !n.IsExported() || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: %s is not a string literal", fset.Position(n.Pos()), n.Name)
							continue
						}
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, reasonConst{alias: g.alias, name: n.Name, value: v, pages: g.pages,
							pos: path.Join("api", fset.Position(n.Pos()).String())})
					}
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found only %d reason constants in api/: is the test reading the right folders?", len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].qualified() < out[j].qualified() })
	return out
}

// reasonsHeading starts the Reasons table of a page; rowRE reads a row's
// reason and constant.
var (
	reasonsHeading = "## Reasons"
	rowRE          = regexp.MustCompile("^\\| `([A-Za-z]+)` \\| `([a-z0-9]+\\.[A-Za-z]+Reason)` \\|")
)

// docRows reads the Reasons table of every docs/api page.
func docRows(t *testing.T) []docRow {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []docRow
	for _, p := range pages {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		page := filepath.Base(p)
		in, n := false, 0
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "## "):
				in = line == reasonsHeading
			case in && strings.HasPrefix(line, "| `"):
				m := rowRE.FindStringSubmatch(line)
				if m == nil {
					t.Errorf("%s:%d: a Reasons row reads | `Reason` | `package.NameReason` | where | meaning |, not %q", page, n, line)
					continue
				}
				rows = append(rows, docRow{page: page, value: m[1], constant: m[2], line: n})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no Reasons table in %s", docsDir)
	}
	return rows
}

// usedReasons returns the reason constants, as alias.Name, that non-test Go
// code outside api/ refers to, whatever alias a file imports them under.
func usedReasons(t *testing.T) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for _, dir := range codeDirs {
		eachGoFile(t, dir, func(_ *token.FileSet, f *ast.File) {
			aliases := map[string]string{} // local name -> groups' alias
			for _, g := range groups {
				if name := importName(f, "plumb.dev/api/"+g.dir); name != "" {
					aliases[name] = g.alias
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && aliases[x.Name] != "" {
						used[aliases[x.Name]+"."+sel.Sel.Name] = true
					}
				}
				return true
			})
		})
	}
	return used
}

// eachGoFile parses every non-test Go file under dir.
func eachGoFile(t *testing.T, dir string, fn func(*token.FileSet, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "vendor" || (strings.HasPrefix(name, ".") && p != dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		fn(fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importName returns the name under which f imports importPath, or "".
func importName(f *ast.File, importPath string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path.Base(p)
		}
	}
	return ""
}

// importNameBySuffix returns the name under which f imports a package whose
// path ends in suffix, or "".
func importNameBySuffix(f *ast.File, suffix string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); strings.HasSuffix(p, suffix) {
			return importName(f, p)
		}
	}
	return ""
}
