package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/google/go-jsonnet"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/message"
)

// jsonnetExt is the extension of the files evaluated in spec.path; imports
// of any extension (.libsonnet, .json, …) are read as they are named.
const jsonnetExt = ".jsonnet"

// JsonnetMaxStack bounds the depth of a Jsonnet evaluation's stack (the
// jsonnet CLI's --max-stack, 500 there too): an unbounded recursion fails
// with "max stack frames exceeded" long before it costs much memory.
//
// Not a recursion in tail position called with tailstrict: go-jsonnet
// drops the caller's frame from its own stack, so this bound never trips,
// while its Go stack grows with every call until the Go runtime's stack
// limit ends the whole process — a fatal error, not a panic, that no
// recover catches. So Jsonnet is evaluated only in a render worker
// (pkg/renderworker: render-controller, plumb build and plumb diff), whose
// death at its stack limit (debug.SetMaxStack) is the render's
// LimitExceeded, never in a process that serves anything else.
const JsonnetMaxStack = 500

// maxJsonnetErrorBytes bounds the part of an evaluation error a build
// reports: a Jsonnet `error` may carry any text, and a stack trace many
// frames.
const maxJsonnetErrorBytes = 2048

// jsonnetStackFrames is how many frames of an evaluation error's stack
// trace are shown.
const jsonnetStackFrames = 10

// isJsonnetFile says whether a path names a file that evaluateJsonnet
// evaluates (and whose output it adds to the sandbox at that path).
func isJsonnetFile(p string) bool { return strings.HasSuffix(p, jsonnetExt) }

// evaluateJsonnet evaluates the .jsonnet files directly in userDir (the
// folder of spec.path; sub-folders are left alone, as Argo CD does without
// directory.recurse, since they commonly hold libraries and vendored
// code), when it has no kustomization file, and adds each file's objects to
// the sandbox as YAML seen at the file's own path, where
// generateKustomization lists it like any manifest file. A folder with a
// kustomization file is kustomize's: its .jsonnet files are not evaluated,
// and spec.jsonnet set there is an error rather than ignored. spec.jsonnet
// set on a folder without .jsonnet files is an error too.
//
// Imports read only files of the source through the sandbox (its byte
// budget and deadline, links inside the source only; jsonnetImporter);
// the VM has no native functions, a stack depth of JsonnetMaxStack, and
// its output is bounded by the rendered size limit. Its time is not:
// go-jsonnet takes no context and has no step budget, so an evaluation
// runs in a goroutine the build abandons when ctx ends, and in a render
// worker (pkg/renderworker) the process is killed at the deadline and
// bounded by the worker's memory limit.
func evaluateJsonnet(ctx context.Context, fsys *sandboxFS, root, rel, userDir string, opts *kustomizev1.Jsonnet, limits Limits) error {
	if kustomizationFile(fsys, userDir) != "" {
		if opts != nil {
			return buildErr("spec.jsonnet is set, but path %q has a kustomization file: .jsonnet files are evaluated only in a folder without one", displayPath(rel))
		}
		return nil
	}
	names, err := readDirSorted(fsys, userDir)
	if err != nil {
		return buildErr("reading the source: %v", err)
	}
	realDir, err := filepath.EvalSymlinks(userDir)
	if err != nil {
		return buildErr("reading the source: %v", err)
	}
	sourceRoot := filepath.Join(root, sourceFolder)
	var files []string
	for _, name := range names {
		if isJsonnetFile(name) && !fsys.IsDir(filepath.Join(userDir, name)) {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		if opts != nil {
			return buildErr("spec.jsonnet is set, but path %q holds no .jsonnet file", displayPath(rel))
		}
		return nil
	}
	var libs []string
	if opts != nil {
		for _, l := range opts.Libs {
			lib, err := entryPath(l)
			if err != nil || path.IsAbs(l) {
				return buildErr("spec.jsonnet.libs: %q must be a folder inside the source", l)
			}
			libs = append(libs, lib)
		}
	}
	imp := &jsonnetImporter{fsys: fsys, sourceRoot: sourceRoot, libs: libs, found: map[string]jsonnet.Contents{}}
	// The outputs join the sandbox once every file is evaluated: one file
	// may import another, and must read its source.
	outputs := make([][]byte, len(files))
	for i, name := range files {
		file := path.Join(rel, name)
		out, err := evaluateJsonnetFile(ctx, fsys, imp, file, opts)
		if err != nil {
			return err
		}
		if int64(len(out)) > limits.MaxOutputBytes {
			return limitErr("%s evaluates to more than the limit of %d bytes (--max-rendered-size)", file, limits.MaxOutputBytes)
		}
		docs, err := jsonnetDocuments(file, out)
		if err != nil {
			return err
		}
		outputs[i] = docs
	}
	for i, name := range files {
		fsys.addVirtual(filepath.Join(realDir, name), outputs[i])
	}
	return nil
}

// evaluateJsonnetFile evaluates one file (a slash path relative to the
// source root) in a VM of its own, returning its JSON, or an error when
// ctx ends first.
func evaluateJsonnetFile(ctx context.Context, fsys *sandboxFS, imp *jsonnetImporter, file string, opts *kustomizev1.Jsonnet) (string, error) {
	vm := jsonnet.MakeVM()
	vm.MaxStack = JsonnetMaxStack
	vm.Importer(imp)
	vm.SetTraceOut(io.Discard) // std.trace is the author's debugging aid, not the controller's log
	vm.ErrorFormatter.SetMaxStackTraceSize(jsonnetStackFrames)
	if opts != nil {
		for _, v := range opts.ExtVars {
			if v.Code {
				vm.ExtCode(v.Name, v.Value)
			} else {
				vm.ExtVar(v.Name, v.Value)
			}
		}
		for _, v := range opts.TLAs {
			if v.Code {
				vm.TLACode(v.Name, v.Value)
			} else {
				vm.TLAVar(v.Name, v.Value)
			}
		}
	}
	type outcome struct {
		json string
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: fmt.Errorf("the evaluation failed on this input: %v", p)}
			}
		}()
		out, err := vm.EvaluateFile(file)
		done <- outcome{out, err}
	}()
	select {
	case o := <-done:
		if refused := fsys.refusal(); refused != nil {
			return "", refused
		}
		if o.err != nil {
			return "", buildErr("evaluating %s: %s", file, jsonnetErrorText(o.err))
		}
		return o.json, nil
	case <-ctx.Done():
		return "", fsys.refuse(deadlineErr(ctx))
	}
}

// jsonnetErrorText is an evaluation error fit for a condition: at most
// maxJsonnetErrorBytes, control characters replaced, the go-jsonnet
// prefix and trailing blank lines dropped. Its paths are the source's own
// (the importer names files relative to the source root).
func jsonnetErrorText(err error) string {
	msg := strings.ToValidUTF8(err.Error(), "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, msg)
	return message.TruncateTo(strings.TrimSpace(msg), maxJsonnetErrorBytes)
}

// jsonnetDocuments turns a file's output into YAML documents: an object is
// one document, an array or a kind: List one document per element (of
// the array, of the List's items). Anything else, and an element that is
// not an object, is refused naming the file.
func jsonnetDocuments(file, out string) ([]byte, error) {
	var top any
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		return nil, buildErr("%s: the output is not JSON: %v", file, err)
	}
	var items []json.RawMessage
	switch t := top.(type) {
	case map[string]any:
		if _, isArray := t["items"].([]any); isArray && t["kind"] == "List" {
			var list struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				return nil, buildErr("%s: the output is not JSON: %v", file, err)
			}
			items = list.Items
			break
		}
		items = []json.RawMessage{json.RawMessage(out)}
	case []any:
		if err := json.Unmarshal([]byte(out), &items); err != nil {
			return nil, buildErr("%s: the output is not JSON: %v", file, err)
		}
	default:
		return nil, buildErr("%s evaluates to %s; a Jsonnet file must evaluate to an object, an array of objects or a kind: List", file, jsonKind(top))
	}
	var b strings.Builder
	for i, item := range items {
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return nil, buildErr("%s: element %d: %v", file, i+1, err)
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, buildErr("%s: element %d of the array is %s, not an object", file, i+1, jsonKind(v))
		}
		y, err := yaml.JSONToYAML(item)
		if err != nil {
			return nil, buildErr("%s: element %d: %v", file, i+1, err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// jsonKind names a decoded JSON value's type for a message.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// jsonnetImporter reads import, importstr and importbin targets from the
// source through the sandbox: a path relative to the importing file, then
// to each of spec.jsonnet.libs, never an absolute path or one that leaves
// the source (.., or a link whose target is outside it). It names what
// it finds by its slash path relative to the source root, so messages
// name files as the repository does, and keeps each file's contents, as
// go-jsonnet requires of an importer.
type jsonnetImporter struct {
	fsys       *sandboxFS
	sourceRoot string
	libs       []string
	found      map[string]jsonnet.Contents
}

// Import implements jsonnet.Importer. importedFrom is "" for the file
// evaluated, whose path is already relative to the source root.
func (imp *jsonnetImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if importedPath == "" || path.IsAbs(importedPath) || filepath.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q refused: imports name files inside the source by a relative path", importedPath)
	}
	var candidates []string
	if importedFrom == "" {
		candidates = []string{importedPath}
	} else {
		candidates = append(candidates, path.Join(path.Dir(importedFrom), importedPath))
		for _, lib := range imp.libs {
			candidates = append(candidates, path.Join(lib, importedPath))
		}
	}
	for _, c := range candidates {
		c = path.Clean(c)
		if c == ".." || strings.HasPrefix(c, "../") {
			return jsonnet.Contents{}, "", fmt.Errorf("import %q refused: %s is outside the source", importedPath, c)
		}
		if contents, ok := imp.found[c]; ok {
			return contents, c, nil
		}
		abs := filepath.Join(imp.sourceRoot, filepath.FromSlash(c))
		if !imp.fsys.Exists(abs) || imp.fsys.IsDir(abs) {
			if err := imp.fsys.alive(); err != nil {
				return jsonnet.Contents{}, "", err
			}
			if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 && !imp.fsys.IsDir(abs) {
				// The sandbox sees no file where a link leaves the source.
				return jsonnet.Contents{}, "", fmt.Errorf("import %q refused: %s is a link that leads outside the source or nowhere", importedPath, c)
			}
			continue
		}
		real, data, err := imp.fsys.readBounded(abs, c, false)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Reason != kustomizev1.BuildFailedReason {
				// A passed budget is the build's failure, not the
				// import's: reported as LimitExceeded by the caller.
				return jsonnet.Contents{}, "", imp.fsys.refuse(err)
			}
			return jsonnet.Contents{}, "", fmt.Errorf("import %q: %v", importedPath, err)
		}
		if real != imp.sourceRoot && !strings.HasPrefix(real, imp.sourceRoot+string(filepath.Separator)) {
			return jsonnet.Contents{}, "", fmt.Errorf("import %q refused: %s leads outside the source", importedPath, c)
		}
		contents := jsonnet.MakeContentsRaw(data)
		imp.found[c] = contents
		return contents, c, nil
	}
	return jsonnet.Contents{}, "", fmt.Errorf("import %q: not found beside %s or in spec.jsonnet.libs", importedPath, orSourceRoot(importedFrom))
}

func orSourceRoot(file string) string {
	if file == "" {
		return "the source root"
	}
	return file
}

// jsonnetKey is what spec.jsonnet adds to a shared build's key: the same
// folder and overlay evaluate to other objects with other variables.
func jsonnetKey(opts *kustomizev1.Jsonnet) string {
	if opts == nil {
		return ""
	}
	b, _ := json.Marshal(opts)
	return "\x00jsonnet:" + string(b)
}
