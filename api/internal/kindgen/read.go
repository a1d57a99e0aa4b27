package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// readKinds parses the package in dir (its non-test files other than
// outputFile) and returns its name and its kinds, sorted by name.
func readKinds(dir string) (string, []kind, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || n == outputFile {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("%s: no Go files", dir)
	}
	p := index(files)

	var kinds []kind
	for name, s := range p.structs {
		var typeMeta, objectMeta bool
		var spec, status map[string]field
		for _, f := range s.st.Fields.List {
			t, ok := p.resolve(f.Type, s.imports)
			if !ok || t.pointer {
				continue
			}
			if len(f.Names) == 0 {
				typeMeta = typeMeta || t == typeRef{pkg: metav1Path, name: "TypeMeta"}
				objectMeta = objectMeta || t == typeRef{pkg: metav1Path, name: "ObjectMeta"}
				continue
			}
			for _, n := range f.Names {
				switch {
				case n.Name == "Spec" && t.pkg == ".":
					spec = p.fieldsOf(t.name)
				case n.Name == "Status" && t.pkg == ".":
					status = p.fieldsOf(t.name)
				}
			}
		}
		if typeMeta && objectMeta {
			kinds = append(kinds, kind{name: name, spec: spec, status: status, declaredByHand: p.declared[name]})
		}
	}
	slices.SortFunc(kinds, func(a, b kind) int { return strings.Compare(a.name, b.name) })
	return files[0].Name.Name, kinds, nil
}

// pkgIndex is what readKinds needs of a package's declarations.
type pkgIndex struct {
	structs    map[string]structType
	localTypes map[string]bool            // every type the package declares
	declared   map[string]map[string]bool // method names by receiver type
}

// structType is a struct declaration with the imports of its file, by
// which its field types are spelled.
type structType struct {
	st      *ast.StructType
	imports map[string]string // local name → import path
}

func index(files []*ast.File) pkgIndex {
	p := pkgIndex{structs: map[string]structType{}, localTypes: map[string]bool{}, declared: map[string]map[string]bool{}}
	for _, f := range files {
		imports := importsOf(f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					p.localTypes[ts.Name.Name] = true
					if st, ok := ts.Type.(*ast.StructType); ok {
						p.structs[ts.Name.Name] = structType{st, imports}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				recv := receiverName(d.Recv.List[0].Type)
				if p.declared[recv] == nil {
					p.declared[recv] = map[string]bool{}
				}
				p.declared[recv][d.Name.Name] = true
			}
		}
	}
	return p
}

// resolve returns the type expr spells in a file with imports; false for
// any type that is not a name, a qualified name or a pointer to either.
func (p pkgIndex) resolve(expr ast.Expr, imports map[string]string) (typeRef, bool) {
	var t typeRef
	if star, ok := expr.(*ast.StarExpr); ok {
		t.pointer, expr = true, star.X
	}
	switch e := expr.(type) {
	case *ast.Ident:
		t.name = e.Name
		if p.localTypes[e.Name] {
			t.pkg = "."
		}
		return t, true
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok || imports[x.Name] == "" {
			return t, false
		}
		t.pkg, t.name = imports[x.Name], e.Sel.Name
		return t, true
	}
	return t, false
}

// fieldsOf returns the named fields of the package's struct type name, nil
// when there is no such type. Fields promoted from an embedded struct are
// not looked into: no Plumb spec or status has one kindgen knows, and if
// one did, api/kinds_test.go would say its method is missing.
func (p pkgIndex) fieldsOf(name string) map[string]field {
	s, ok := p.structs[name]
	if !ok {
		return nil
	}
	out := map[string]field{}
	for _, f := range s.st.Fields.List {
		t, ok := p.resolve(f.Type, s.imports)
		if !ok {
			continue
		}
		for _, n := range f.Names {
			out[n.Name] = field{json: jsonName(n.Name, f.Tag), typ: t}
		}
	}
	return out
}

// importsOf maps the local names of f's imports to their paths. An import
// without a name is known by its path's last element, which is the
// package's name for every package the API types import.
func importsOf(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = p
	}
	return out
}

// receiverName is the type name of a method receiver, T or *T.
func receiverName(expr ast.Expr) string {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	if id, ok := expr.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// jsonName is the field's name in its json tag, or its Go name without one.
func jsonName(goName string, tag *ast.BasicLit) string {
	if tag == nil {
		return goName
	}
	raw, err := strconv.Unquote(tag.Value)
	if err != nil {
		return goName
	}
	name, _, _ := strings.Cut(reflect.StructTag(raw).Get("json"), ",")
	if name == "" || name == "-" {
		return goName
	}
	return name
}
