package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/yamlsize"
)

// yamlSeeds are files of the shapes a source holds and the oddities kio's
// reader and a strict YAML parser read differently: several documents,
// CRLF line ends, separators with comments or content, document end
// markers, directives, Lists, empty and comment-only documents, anchors,
// aliases and merge keys (quoted or not), JSON, flow style, a builtin
// plugin's apiVersion.
var yamlSeeds = []string{
	cmA,
	cmA + "---\n" + cmB,
	"---\n" + cmA,
	strings.ReplaceAll(cmA, "\n", "\r\n"),
	cmA + "--- # a comment\n" + cmB,
	cmA + "---x\n" + cmB,
	cmA + "...\n" + cmB,
	"%YAML 1.2\n---\n" + cmA,
	"apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA),
	"apiVersion: v1\nkind: ResourceList\nitems: []\n",
	"apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: l\nitems: []\n",
	"",
	"\n\n",
	"# only a comment\n",
	"null\n",
	"{}\n",
	"[a, b]\n",
	"just a string\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l\n    app: x\n  annotations: *l\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l\n    app: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  labels: &m\n    app: y\nstringData:\n  <<: *m\n  j: w\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata:\n  \"<<\": not a merge\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata:\n  ? [complex]\n  : key\n",
	`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"k": "v"}}`,
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: f, annotations: {a: 1}}\ndata: {k: [1, 2]}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 5\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map]\n",
	"apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  s: |\n    a\n    ---\n    b\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  k: v", // no final newline
	"a: [unclosed\n",
}

// FuzzParseOnce holds the single parse of a manifest file to what it
// replaces: where kioDocuments takes the documents the sandbox counted,
// they are kio's reader's own for the same bytes; measure counts what
// yamlsize.Expanded counts, and refuses what it refuses in its words; a
// file it calls plain is one kustomize's DeAnchor leaves as it is; and
// one it finds no builtin plugin apiVersion in has none.
func FuzzParseOnce(f *testing.F) {
	for _, s := range yamlSeeds {
		f.Add(s, int64(0))
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, data string, max int64) {
		if max <= 0 || max > DefaultMaxNodes {
			max = DefaultMaxNodes
		}
		s := &sandboxFS{limits: Limits{MaxNodes: max, MaxDocuments: DefaultMaxDocuments}.withDefaults()}
		docs, err := s.parse("f.yaml", []byte(data))
		for _, doc := range strictDocuments(t, data) {
			want, wantErr := yamlsize.Expanded(doc, max)
			got, shape, gotErr := measure(doc, max)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() || wantErr == nil && got != want {
				t.Fatalf("measure = %d, %v; Expanded = %d, %v", got, gotErr, want, wantErr)
			}
			if holdsScalar(doc, konfig.BuiltinPluginApiVersion) && !shape.builtinConfig {
				t.Fatal("a builtin plugin apiVersion not found")
			}
			if gotErr == nil && !shape.aliased && !shape.mergeKey {
				resolved := kyaml.CopyYNode(doc)
				if err := kyaml.NewRNode(resolved).DeAnchor(); err != nil {
					t.Fatalf("DeAnchor refuses a plain document: %v", err)
				}
				if !reflect.DeepEqual(resolved, doc) {
					t.Fatal("DeAnchor changed a plain document")
				}
			}
		}
		if err != nil {
			return // refused by a budget: nothing is taken
		}
		got, taken := kioDocuments([]byte(data), docs.docs)
		want, kioErr := readManifestDocuments([]byte(data))
		if !taken {
			return
		}
		if kioErr != nil {
			t.Fatalf("took documents kio's reader refuses: %v", kioErr)
		}
		if len(got) != len(want) {
			t.Fatalf("took %d documents, kio's reader reads %d", len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i].Document(), want[i].Document()) {
				t.Fatalf("document %d differs from kio's reader's", i)
			}
		}
	})
}

// strictDocuments decodes data as the sandbox's parse does, without
// budgets.
func strictDocuments(t *testing.T, data string) []*kyaml.Node {
	t.Helper()
	dec := kyaml.NewDecoder(strings.NewReader(data))
	var docs []*kyaml.Node
	for {
		doc := new(kyaml.Node)
		if err := dec.Decode(doc); err != nil {
			return docs
		}
		docs = append(docs, doc)
	}
}

// holdsScalar reports whether a scalar of n's tree has the value v.
func holdsScalar(n *kyaml.Node, v string) bool {
	if n.Kind == kyaml.ScalarNode && n.Value == v {
		return true
	}
	for _, c := range n.Content {
		if holdsScalar(c, v) {
			return true
		}
	}
	return false
}

// TestParseOnceTakesTheCommonFiles: the files of one document a source is
// mostly made of are taken as counted, and plain; several documents, CRLF
// line ends and Lists are parsed again, and anchors and merge keys are
// resolved.
func TestParseOnceTakesTheCommonFiles(t *testing.T) {
	for _, tc := range []struct {
		name         string
		data         string
		taken, plain bool
	}{
		{"one object", cmA, true, true},
		{"JSON", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`, true, true},
		{"a separator first", "---\n" + cmA, true, true},
		{"a comment before a separator", "# c\n---\n" + cmA, false, false},
		{"two objects", cmA + "---\n" + cmB, false, false},
		{"CRLF", strings.ReplaceAll(cmA, "\n", "\r\n"), false, false},
		{"a List", "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA), false, false},
		{"an empty document", "# nothing\n", false, false},
		{"an anchor", yamlSeeds[19], true, false},
		{"an alias", yamlSeeds[18], true, false},
		{"a quoted merge key", yamlSeeds[21], true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sandboxFS{limits: Limits{}.withDefaults()}
			docs, err := s.parse("f.yaml", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			_, taken := kioDocuments([]byte(tc.data), docs.docs)
			if taken != tc.taken || taken && docs.plain != tc.plain {
				t.Fatalf("taken %t, plain %t; want %t, %t", taken, docs.plain, tc.taken, tc.plain)
			}
		})
	}
}

// TestListDirSaysWhatIsDirSays: the folder listing generateKustomization
// walks names what ReadDir names and calls a folder what IsDir calls one,
// for files, folders, links to either inside and outside the source,
// a dangling link, a FIFO and a virtual file; and the paths it resolves
// resolve as the disk resolves them.
func TestListDirSaysWhatIsDirSays(t *testing.T) {
	work := t.TempDir()
	outside := t.TempDir()
	src := SourceDir(work)
	writeTree(t, src, map[string]string{"app/a.yaml": cmA, "app/sub/b.yaml": cmB})
	writeTree(t, outside, map[string]string{"o/c.yaml": cmA})
	app := filepath.Join(src, "app")
	for name, target := range map[string]string{
		"file-link": "a.yaml", "dir-link": "sub", "outside-file": filepath.Join(outside, "o", "c.yaml"),
		"outside-dir": filepath.Join(outside, "o"), "dangling": "nothing",
	} {
		if err := os.Symlink(target, filepath.Join(app, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(app, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := newSandboxFS(context.Background(), work, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys.addVirtual(filepath.Join(app, "kustomization.yaml"), []byte(kustomizationHeader))
	entries, err := fsys.listDir(app)
	if err != nil {
		t.Fatal(err)
	}
	names, err := fsys.ReadDir(app)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(names) || len(names) != 9 {
		t.Fatalf("listed %d entries, ReadDir %d, want 9", len(entries), len(names))
	}
	dirs := 0
	for i, e := range entries {
		if e.name != names[i] {
			t.Fatalf("entry %d is %q, ReadDir says %q", i, e.name, names[i])
		}
		p := filepath.Join(app, e.name)
		if want := fsys.IsDir(p); e.dir != want {
			t.Errorf("%s: dir %t, IsDir %t", e.name, e.dir, want)
		}
		// The resolutions the listing kept are the disk's own.
		if e.name != "kustomization.yaml" {
			dir, name, err := fsys.CleanedAbs(p)
			wantDir, wantName, wantErr := fsys.disk.CleanedAbs(p)
			if dir != wantDir || name != wantName || (err == nil) != (wantErr == nil) {
				t.Errorf("%s resolves to %s, %s, %v; the disk says %s, %s, %v", e.name, dir, name, err, wantDir, wantName, wantErr)
			}
		}
		if e.dir {
			dirs++
		}
	}
	if dirs != 2 {
		t.Errorf("%d folders, want 2 (sub and the link to it)", dirs)
	}
}

// TestAFIFOIsRefusedNotWaitedFor: a FIFO among the manifests is refused as
// not a regular file; opening it does not wait for a writer that never
// comes (which the build's deadline could not stop).
func TestAFIFOIsRefusedNotWaitedFor(t *testing.T) {
	work := t.TempDir()
	writeTree(t, SourceDir(work), map[string]string{"a.yaml": cmA})
	if err := syscall.Mkfifo(filepath.Join(SourceDir(work), "b.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "b.yaml is not a regular file") {
			t.Fatalf("err = %v, want b.yaml refused as not a regular file", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the build waited on the FIFO")
	}
}

// TestKeptFilesCostTheirBytesOnEveryRead: a manifest generateKustomization
// read is read again from memory, charged to the byte budget again, and
// each read gets the file as it is, whatever kustomize did with the bytes
// of the read before.
func TestKeptFilesCostTheirBytesOnEveryRead(t *testing.T) {
	work := t.TempDir()
	writeTree(t, SourceDir(work), map[string]string{"a.yaml": cmA})
	fsys, err := newSandboxFS(context.Background(), work, Limits{MaxInputBytes: int64(3*len(cmA) + 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(SourceDir(work), "a.yaml")
	first, docs, err := fsys.readManifest(p)
	if err != nil || string(first) != cmA || len(docs.docs) != 1 {
		t.Fatalf("first read: %q, %d documents, %v", first, len(docs.docs), err)
	}
	// The file goes from the disk: the next reads are the kept one.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		again, err := fsys.ReadFile(p)
		if err != nil || string(again) != cmA {
			t.Fatalf("read %d: %q, %v", i, again, err)
		}
		again[0] = 'X'
	}
	if fsys.readBytes != int64(3*len(cmA)) {
		t.Fatalf("%d bytes charged, want %d", fsys.readBytes, 3*len(cmA))
	}
	_, err = fsys.ReadFile(p)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "--max-render-input") {
		t.Fatalf("fourth read: %v, want the byte budget's refusal", err)
	}
}

// TestMissingOnTheWaySkipsOnlyWalksThatFindNothing: nameReferences, which
// skips the paths that lead through mappings to a missing field, says
// what it says when it walks every path with kustomize's fieldspec
// filter, on workloads of every shape the filter walks differently: no
// pod spec, a null or a list on the way, names, mappings, lists of
// either, and a pod spec with every referring field.
func TestMissingOnTheWaySkipsOnlyWalksThatFindNothing(t *testing.T) {
	head := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
	for _, tc := range []struct{ name, spec string }{
		{"no spec", ""},
		{"a null spec", "spec: null\n"},
		{"a scalar spec", "spec: x\n"},
		{"a list for spec", "spec:\n- template: {spec: {serviceAccountName: a}}\n"},
		{"no template", "spec: {replicas: 1}\n"},
		{"a null pod spec", "spec: {template: {spec: ~}}\n"},
		{"a list for the pod spec", "spec: {template: {spec: [{volumes: [{configMap: {name: c}}]}]}}\n"},
		{"an empty pod spec", "spec: {template: {spec: {}}}\n"},
		{"containers without references", "spec: {template: {spec: {containers: [{name: app, image: x}]}}}\n"},
		{"a ServiceAccount by name", "spec: {template: {spec: {serviceAccountName: a}}}\n"},
		{"a ServiceAccount as a mapping", "spec: {template: {spec: {serviceAccountName: {name: a}}}}\n"},
		{"volumes naming a ConfigMap", "spec: {template: {spec: {volumes: [{name: v, configMap: {name: c}}]}}}\n"},
		{"volumes that are names", "spec: {template: {spec: {volumes: [a, b]}}}\n"},
		{"a null volumes field", "spec: {template: {spec: {volumes: null}}}\n"},
		{"env from a Secret", "spec: {template: {spec: {containers: [{name: a, env: [{name: e, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}}}\n"},
		{"image pull Secrets as names", "spec: {template: {spec: {imagePullSecrets: [a, b]}}}\n"},
		{"an alias on the way", "spec: {template: &t {spec: {priorityClassName: p}}, x: *t}\n"},
		{"every field", "spec: {template: {spec: {serviceAccountName: a, priorityClassName: p, imagePullSecrets: [{name: s}], " +
			"volumes: [{configMap: {name: c}}, {secret: {secretName: s}}, {persistentVolumeClaim: {claimName: c}}, {projected: {sources: [{configMap: {name: c}}, {secret: {name: s}}]}}], " +
			"initContainers: [{name: i, envFrom: [{configMapRef: {name: c}}, {secretRef: {name: s}}]}], " +
			"containers: [{name: a, env: [{name: e, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}]}}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := resourceFactory.SliceFromBytes([]byte(head + tc.spec))
			if err != nil || len(rs) != 1 {
				t.Fatalf("%d resources, %v", len(rs), err)
			}
			kind := fastKinds[groupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}]
			found, ok := nameReferences(rs[0], kind)
			fullWalk = true
			wantFound, wantOK := nameReferences(rs[0], kind)
			fullWalk = false
			if found != wantFound || ok != wantOK {
				t.Fatalf("found %t, ok %t; the full walk says %t, %t", found, ok, wantFound, wantOK)
			}
		})
	}
}
