package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"plumb.dev/api/fluxport"
)

func main() {
	extract := flag.String("extract", "", "read Flux's CRDs from this folder and write the field list (-fields) instead of the page")
	fields := flag.String("fields", "internal/portingdoc/flux-fields.txt", "the list of Flux's fields")
	crds := flag.String("crds", "../deploy/crds", "Plumb's CRDs")
	out := flag.String("out", "../docs/api/porting-from-flux.md", "the page to write")
	flag.Parse()
	if err := run(*extract, *fields, *crds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "portingdoc:", err)
		os.Exit(1)
	}
}

func run(extract, fieldsFile, crdDir, out string) error {
	if extract != "" {
		flux, err := readCRDs(extract)
		if err != nil {
			return err
		}
		return os.WriteFile(fieldsFile, writeFields(flux), 0o644)
	}
	data, err := os.ReadFile(fieldsFile)
	if err != nil {
		return err
	}
	flux, err := parseFields(data)
	if err != nil {
		return err
	}
	plumb, err := readCRDs(crdDir)
	if err != nil {
		return err
	}
	return os.WriteFile(out, page(flux, plumb), 0o644)
}

// field is one top-level field of a kind's spec or status.
type field struct {
	Part string // "spec" or "status"
	Name string
	Enum []string
}

// kind is one kind's fields, by its name (the same in Flux and Plumb).
type kind struct {
	Group, Version, Kind string
	Fields               []field
}

// readCRDs reads every CRD of dir, its storage version's top-level spec
// and status fields, by kind.
func readCRDs(dir string) (map[string]*kind, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]*kind{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				continue
			}
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue // the kustomization.yaml beside them
		}
		for _, v := range crd.Spec.Versions {
			if !v.Storage || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			k := &kind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			for _, part := range []string{"spec", "status"} {
				props := v.Schema.OpenAPIV3Schema.Properties[part].Properties
				for name, p := range props {
					f := field{Part: part, Name: name}
					for _, e := range p.Enum {
						f.Enum = append(f.Enum, strings.Trim(string(e.Raw), `"`))
					}
					sort.Strings(f.Enum)
					k.Fields = append(k.Fields, f)
				}
			}
			sortFields(k.Fields)
			out[k.Kind] = k
		}
	}
	return out, nil
}

func sortFields(fs []field) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Part != fs[j].Part {
			return fs[i].Part == "spec"
		}
		return fs[i].Name < fs[j].Name
	})
}

// writeFields is the list's format: a line per kind ("kind <group>/<version>
// <Kind>"), then a line per field ("<part> <name> [value,value]").
func writeFields(kinds map[string]*kind) []byte {
	var b bytes.Buffer
	b.WriteString("# Flux's kinds: the top-level spec and status fields of each storage version\n# (portingdoc -extract; the values of an enum after the name).\n")
	for _, name := range sortedKinds(kinds) {
		k := kinds[name]
		fmt.Fprintf(&b, "kind %s/%s %s\n", k.Group, k.Version, k.Kind)
		for _, f := range k.Fields {
			fmt.Fprintf(&b, "%s %s", f.Part, f.Name)
			if len(f.Enum) > 0 {
				fmt.Fprintf(&b, " %s", strings.Join(f.Enum, ","))
			}
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func parseFields(data []byte) (map[string]*kind, error) {
	out := map[string]*kind{}
	var cur *kind
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		switch {
		case len(w) == 3 && w[0] == "kind":
			gv := strings.SplitN(w[1], "/", 2)
			if len(gv) != 2 {
				return nil, fmt.Errorf("line %d: %q is not group/version", n, w[1])
			}
			cur = &kind{Group: gv[0], Version: gv[1], Kind: w[2]}
			out[cur.Kind] = cur
		case cur != nil && (len(w) == 2 || len(w) == 3) && (w[0] == "spec" || w[0] == "status"):
			f := field{Part: w[0], Name: w[1]}
			if len(w) == 3 {
				f.Enum = strings.Split(w[2], ",")
			}
			cur.Fields = append(cur.Fields, f)
		default:
			return nil, fmt.Errorf("line %d: %q", n, line)
		}
	}
	return out, sc.Err()
}

func sortedKinds(kinds map[string]*kind) []string {
	var names []string
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// plumbGroup is the group Plumb serves a Flux group's kinds under.
func plumbGroup(fluxGroup string) string {
	return strings.Replace(strings.Replace(fluxGroup, ".toolkit.fluxcd.io", ".plumb.dev", 1), ".fluxcd.io", ".plumb.dev", 1)
}

// page writes the Markdown page.
func page(flux, plumb map[string]*kind) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	total, supported := 0, 0
	var body bytes.Buffer
	for _, name := range sortedKinds(flux) {
		fk := flux[name]
		pk := plumb[name]
		fmt.Fprintf(&body, "\n## %s\n\n", name)
		if pk == nil {
			fmt.Fprintf(&body, "Flux's `%s/%s`. Plumb has no such kind yet: a manifest of it is refused (no CRD serves it).\n", fk.Group, fk.Version)
			if n := notes[name]; n != "" {
				fmt.Fprintf(&body, "\n%s\n", n)
			}
			for _, f := range fk.Fields {
				if f.Part == "spec" {
					total++
				}
			}
			continue
		}
		fmt.Fprintf(&body, "Flux's `%s/%s` is Plumb's `%s/%s`.\n", fk.Group, fk.Version, pk.Group, pk.Version)
		if plumbGroup(fk.Group) != pk.Group {
			fmt.Fprintf(&body, "(Plumb's group is not the usual rename of Flux's.)\n")
		}
		body.WriteString("\n| field | in Plumb | note |\n|---|---|---|\n")
		for _, f := range fk.Fields {
			pf, ok := find(pk.Fields, f.Part, f.Name)
			state, note := "yes", notes[name+"."+f.Part+"."+f.Name]
			switch {
			case !ok && f.Part == "spec":
				state = "refused"
				if note == "" {
					note = fluxport.Refused(name, f.Part+"."+f.Name)
				}
				if note == "" {
					note = "not implemented: the API server refuses it as an unknown field"
				}
			case !ok:
				state = "not written"
			default:
				if missing := missingValues(f.Enum, pf.Enum); len(missing) > 0 {
					state = "yes, but not " + strings.Join(quoted(missing), ", ")
				}
				note = withRefusedParts(note, name, f.Part+"."+f.Name)
			}
			if f.Part == "spec" {
				total++
				if ok {
					supported++
				}
			}
			fmt.Fprintf(&body, "| `%s.%s` | %s | %s |\n", f.Part, f.Name, state, note)
		}
	}
	fmt.Fprintf(&b, "Of Flux's %d top-level spec fields, Plumb accepts %d.\n\n", total, supported)
	b.WriteString(fluxTools)
	b.Write(body.Bytes())
	return b.Bytes()
}

func find(fs []field, part, name string) (field, bool) {
	for _, f := range fs {
		if f.Part == part && f.Name == name {
			return f, true
		}
	}
	return field{}, false
}

// missingValues are the values of Flux's enum that Plumb's lacks; none
// when Plumb's field has no enum (any value is accepted by the schema).
func missingValues(flux, plumb []string) []string {
	if len(plumb) == 0 {
		return nil
	}
	var out []string
	for _, v := range flux {
		if !slices.Contains(plumb, v) {
			out = append(out, v)
		}
	}
	return out
}

func quoted(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "`" + v + "`"
	}
	return out
}

const header = `# Porting from Flux

<!-- Generated by api/internal/portingdoc from Flux's CRDs and deploy/crds: do not edit; run make generate. -->

A Flux manifest ports to Plumb by changing its apiVersion:
` + "`source.toolkit.fluxcd.io` becomes `source.plumb.dev`, `kustomize.toolkit.fluxcd.io` becomes `kustomize.plumb.dev`, and so on" + `.
This page lists every top-level field of every Flux kind and what Plumb
does with it: **yes**, the field is read as Flux reads it (an enum value
Plumb does not implement is named); **refused**, the API server refuses
the manifest with the field, so nothing is silently ignored; **not
written**, a status field Plumb's controllers do not fill. The objects a
Flux repository applies keep their Flux annotations and labels
(docs/design/flux.md).

`

// withRefusedParts adds to an accepted field's note the fields inside it
// that Plumb refuses, with fluxport's reasons: written once, there, for
// this page and for sync-controller's errors.
func withRefusedParts(note, kind, field string) string {
	prefix := kind + "." + field + "."
	var parts []string
	for _, key := range fluxport.Fields() {
		if sub, ok := strings.CutPrefix(key, prefix); ok {
			parts = append(parts, fmt.Sprintf("`%s` (%s)", sub, fluxport.Refused(kind, field+"."+sub)))
		}
	}
	if len(parts) == 0 {
		return note
	}
	sort.Strings(parts)
	refused := "refused: " + strings.Join(parts, ", ")
	if note == "" {
		return refused
	}
	return note + "; " + refused
}
