package render

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/flux"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/yamlsize"
)

// SubstituteAnnotation, set to "disabled" as an annotation or label on an
// object, leaves that object out of postBuild substitution; without it,
// Flux's kustomize.toolkit.fluxcd.io/substitute: disabled does (pkg/flux).
const SubstituteAnnotation = flux.PlumbSubstituteKey

// Options tune a build beyond what the Kustomization spec says.
type Options struct {
	// Vars are the postBuild variables: spec.postBuild.substitute merged
	// with the resolved substituteFrom objects. They are used only when
	// spec.postBuild is set, as in Flux.
	Vars Variables
	// StrictSubstitution makes a ${var} without a value and without a
	// default an error instead of the empty string.
	StrictSubstitution bool
	// Limits bound what the build reads and writes; zero fields take the
	// defaults. The build's time is bounded by its context.
	Limits Limits
	// Decryptor, when set (spec.decryption), decrypts SOPS-encrypted
	// generator inputs and patches as kustomize reads them, and encrypted
	// objects after kustomize (decrypt.go). Decrypted values never appear
	// in a build's errors.
	Decryptor Decryptor
	// Shared, when set, shares kustomize's output between builds of the
	// same work folder, path and spec fields (SharedBuilds); the caller
	// promises the work folder never changes. Not used with a Decryptor.
	Shared *SharedBuilds
}

// Result is a successful build.
type Result struct {
	// Manifests is one multi-document YAML stream in canonical order.
	Manifests []byte
	// Objects lists the rendered objects in the order of Manifests.
	Objects []object.ID
	// Digest is "sha256:<hex>" of Manifests.
	Digest string
}

// Error is a build failure with the condition reason it maps to:
// BuildFailed, SubstituteFailed or ValidationFailed.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Reason returns the condition reason for err: that of an *Error, or
// BuildFailed.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return kustomizev1.BuildFailedReason
}

func buildErr(format string, args ...any) error {
	return &Error{Reason: kustomizev1.BuildFailedReason, Err: fmt.Errorf(format, args...)}
}

func validationErr(format string, args ...any) error {
	return &Error{Reason: kustomizev1.ValidationFailedReason, Err: fmt.Errorf(format, args...)}
}

func substituteErr(format string, args ...any) error {
	return &Error{Reason: kustomizev1.SubstituteFailedReason, Err: fmt.Errorf(format, args...)}
}

// SourceDir is where Build expects the source tree inside its work
// folder.
func SourceDir(workDir string) string { return filepath.Join(workDir, sourceFolder) }

// The work folder of a build: the source tree, and beside it the overlay
// kustomization Build writes. Everything kustomize reads is below it.
const (
	sourceFolder  = "source"
	overlayFolder = "overlay"
)

// Build renders spec against the source tree in SourceDir(workDir); see
// the package documentation for the steps and the sandbox. Build never
// writes to workDir (the overlay and a generated kustomization.yaml are in
// memory), so any number of builds may share one tree at once. ctx
// bounds the build's time: when it ends, Build returns at once with a
// LimitExceeded error, and the abandoned kustomize run stops at its next
// file access.
func Build(ctx context.Context, workDir string, spec *kustomizev1.KustomizationSpec, opts Options) (*Result, error) {
	res, err := build(ctx, workDir, spec, opts)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = &Error{Reason: kustomizev1.BuildFailedReason, Err: err}
		}
		return nil, redactError(err, opts.Vars, opts.Decryptor)
	}
	return res, nil
}

// minRedactLen keeps very short secret values (a "1", a "true") from
// blotting out unrelated words of a message; values that short carry
// little secret anyway.
const minRedactLen = 4

// redactError removes every secret value from err's message: a name or a
// field substituted from a Secret can surface in a validation message, and
// a decrypted line in kustomize's complaint about an env file.
func redactError(err error, vars Variables, dec Decryptor) error {
	msg := err.Error()
	clean := msg
	for _, name := range sortedVarNames(vars) {
		if v := vars[name]; v.Secret && len(v.Value) >= minRedactLen {
			clean = strings.ReplaceAll(clean, v.Value, "<redacted:"+name+">")
		}
	}
	if dec != nil {
		clean = dec.Redact(clean)
	}
	if clean == msg {
		return err
	}
	return &Error{Reason: Reason(err), Err: errors.New(clean)}
}

func sortedVarNames(vars Variables) []string {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func build(ctx context.Context, workDir string, spec *kustomizev1.KustomizationSpec, opts Options) (*Result, error) {
	limits := opts.Limits.withDefaults()
	root, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return nil, buildErr("reading the source: %v", err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, buildErr("reading the source: %v", err)
	}
	rel, err := entryPath(spec.Path)
	if err != nil {
		return nil, err
	}
	fsys, err := newSandboxFS(ctx, root, limits, opts.Decryptor)
	if err != nil {
		return nil, buildErr("reading the source: %v", err)
	}
	userDir := filepath.Join(root, sourceFolder, filepath.FromSlash(rel))
	if !fsys.IsDir(userDir) {
		if refused := fsys.refusal(); refused != nil {
			return nil, refused
		}
		return nil, buildErr("path %q not found in the source", displayPath(spec.Path))
	}
	overlay := filepath.Join(root, overlayFolder)
	overlayData, err := overlayFile(path.Join(sourceFolder, rel), spec, func(workRel string) bool {
		return fsys.Exists(filepath.Join(root, filepath.FromSlash(workRel)))
	})
	if err != nil {
		return nil, buildErr("the spec's patches, images or components do not make a kustomization: %v", err)
	}
	var sharedKey string
	if opts.Shared != nil && opts.Decryptor == nil {
		sharedKey = root + "\x00" + rel + "\x00" + string(overlayData) + jsonnetKey(spec.Jsonnet)
	}
	fast, ok := fastPathSpec(spec)
	if !ok || opts.Decryptor != nil {
		fast = nil
	}
	resources, keep, err := kustomizeOnce(opts.Shared, sharedKey, func() ([]*resource.Resource, error) {
		if err := evaluateJsonnet(ctx, fsys, root, rel, userDir, spec.Jsonnet, limits); err != nil {
			return nil, err
		}
		return kustomize(ctx, fsys, root, userDir, overlay, overlayData, fast)
	})
	if err != nil {
		return nil, err
	}

	var vars *Variables
	if spec.PostBuild != nil {
		for _, name := range sortedVarNames(opts.Vars) {
			if !ValidName(name) {
				return nil, substituteErr("variable name %q is invalid: it must match %s", name, varName.String())
			}
		}
		vars = &opts.Vars
	}
	finishOne := func(res *resource.Resource) (rendered, error) {
		if ctx.Err() != nil {
			return rendered{}, deadlineErr(ctx)
		}
		if len(spec.BuildMetadata) > 0 {
			if err := relocateBuildMetadata(&res.RNode, path.Join(sourceFolder, rel)); err != nil {
				return rendered{}, buildErr("%s: reading kustomize's buildMetadata annotations: %v", describe(&res.RNode), err)
			}
		}
		return finish(res, spec.CommonMetadata, vars, opts.StrictSubstitution, limits, opts.Decryptor)
	}
	workers := 1
	if opts.Decryptor == nil {
		// A decryptor keeps its keys' state; the printing of objects
		// without one shares nothing.
		workers = runtime.GOMAXPROCS(0)
	}
	objs, err := finishAll(resources, workers, finishOne)
	if err != nil {
		return nil, err
	}
	res, err := assemble(objs, limits)
	if err == nil && ctx.Err() == nil {
		keep(int64(len(res.Manifests)))
	}
	return res, err
}

// finishAll is finish (one) of each resource, in order, on up to workers
// goroutines: the canonical printing is a fifth of a build of a thousand
// objects (docs/bench/sync.md, "Issue 46: the images-patch shape within
// 1.5×"), each object's on its own nodes, so on a machine with a core to
// spare a Kustomization's render need not wait for it object after object.
// The outcome is the sequential loop's: the objects in their order, or the
// error of the first object that fails (each object's error is its own,
// whatever the others do). Small builds stay on the caller's goroutine.
func finishAll(resources []*resource.Resource, workers int, one func(*resource.Resource) (rendered, error)) ([]rendered, error) {
	objs := make([]rendered, len(resources))
	if workers > len(resources)/finishBatch {
		workers = len(resources) / finishBatch
	}
	if workers < 2 {
		for i, res := range resources {
			o, err := one(res)
			if err != nil {
				return nil, err
			}
			objs[i] = o
		}
		return objs, nil
	}
	var (
		errs = make([]error, len(resources))
		// A panic on hostile input is the caller's to recover, as in the
		// loop: it is carried to the caller's goroutine (when the loop
		// would have reached its object), not let crash the process.
		panicked = make([]*any, len(resources))
		next     atomic.Int64 // the next batch to take
		failed   atomic.Int64 // the lowest index that failed, len(resources) while none
		wg       sync.WaitGroup
	)
	failed.Store(int64(len(resources)))
	finishAt := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				panicked[i], errs[i] = &p, errFinishPanicked
			}
		}()
		objs[i], errs[i] = one(resources[i])
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := int(next.Add(1)-1) * finishBatch
				// Past the first failure nothing is needed: the loop
				// would have stopped there.
				if start >= len(resources) || int64(start) > failed.Load() {
					return
				}
				for i := start; i < min(start+finishBatch, len(resources)); i++ {
					if finishAt(i); errs[i] != nil {
						for f := failed.Load(); int64(i) < f && !failed.CompareAndSwap(f, int64(i)); f = failed.Load() {
						}
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	f := failed.Load()
	switch {
	case f == int64(len(resources)):
		return objs, nil
	case panicked[f] != nil:
		panic(*panicked[f])
	}
	return nil, errs[f]
}

// errFinishPanicked marks, in finishAll, an object whose finish panicked.
var errFinishPanicked = errors.New("panicked")

// finishBatch is how many objects a worker of finishAll takes at once.
const finishBatch = 32

// kustomizeOnce returns the build kept under key in shared, or runs it. A
// build whose key came before is copied before the caller changes it, and
// keep, called once the whole Build has succeeded with the size of its
// output, keeps that copy (key "" or shared nil: nothing is kept).
func kustomizeOnce(shared *SharedBuilds, key string, run func() ([]*resource.Resource, error)) ([]*resource.Resource, func(outputBytes int64), error) {
	noKeep := func(int64) {}
	if shared == nil || key == "" {
		rs, err := run()
		return rs, noKeep, err
	}
	if rs := shared.get(key); rs != nil {
		return rs, noKeep, nil
	}
	rs, err := run()
	if err != nil || !shared.builtBefore(key) {
		return rs, noKeep, err
	}
	kept := copyResources(rs) // finish changes rs
	return rs, func(outputBytes int64) { shared.put(key, kept, outputBytes) }, nil
}

// kustomize adds the overlay (and a generated kustomization when spec.path
// has none) to the sandbox and runs kustomize on it, or, when fast allows
// and spec.path's kustomization lists only files — the generated one, or
// the user's written as it would be — takes the fast path (fastpath.go)
// to the same resources.
func kustomize(ctx context.Context, fsys *sandboxFS, root, userDir, overlay string, overlayData []byte, fast *fastOverlay) ([]*resource.Resource, error) {
	// What Build adds to the tree lives in the sandbox's memory, never on
	// disk: the tree is shared, read-only, by every build of its revision.
	// The fast path builds from spec.path's kustomization: the one
	// generated here when it lists only files, or the user's own, whose
	// files it reads from it (fastPath).
	var (
		generated *generatedList
		kustFile  = kustomizationFile(fsys, userDir)
	)
	if kustFile == "" {
		data, resources, onlyFiles, parsed, err := generateKustomization(fsys, userDir, fast != nil)
		if err != nil {
			return nil, err
		}
		realDir, err := filepath.EvalSymlinks(userDir)
		if err != nil {
			return nil, buildErr("reading the source: %v", err)
		}
		kustFile = filepath.Join(realDir, konfig.DefaultKustomizationFileName())
		fsys.addVirtual(kustFile, data)
		if onlyFiles {
			generated = &generatedList{files: resources, parsed: parsed}
		} else {
			fast = nil
		}
	}
	overlayFile := filepath.Join(overlay, konfig.DefaultKustomizationFileName())
	fsys.addVirtual(overlayFile, overlayData)
	if fast != nil {
		mark := fsys.mark()
		if rs, ok := fastPath(fsys, userDir, overlayFile, kustFile, generated, fast); ok {
			return rs, nil
		}
		fsys.rewind(mark)
	}
	resMap, err := runKustomize(ctx, fsys, overlay, fsys.refuse)
	if refused := fsys.refusal(); refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, buildErr("kustomize build failed: %s", cleanKustomizeError(root, err))
	}
	return resMap.Resources(), nil
}

// runKustomize runs krusty on the overlay within the sandbox filesystem:
// plugins off (no exec, container or Helm), loads restricted to each
// kustomization's root. A kustomize panic on hostile input is an error, and
// the build returns when ctx ends even while kustomize still runs.
func runKustomize(ctx context.Context, fsys filesys.FileSystem, overlay string, refuse func(error) error) (resmap.ResMap, error) {
	kopts := krusty.MakeDefaultOptions()
	kopts.LoadRestrictions = kustypes.LoadRestrictionsRootOnly
	kopts.PluginConfig = kustypes.DisabledPluginConfig()
	kopts.AddManagedbyLabel = false
	type outcome struct {
		resMap resmap.ResMap
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: fmt.Errorf("kustomize failed on this input: %v", p)}
			}
		}()
		m, err := krusty.MakeKustomizer(kopts).Run(fsys, overlay)
		done <- outcome{m, err}
	}()
	select {
	case o := <-done:
		return o.resMap, o.err
	case <-ctx.Done():
		return nil, refuse(deadlineErr(ctx))
	}
}

// entryPath cleans spec.path into a slash path relative to the source
// root ("" for the root).
func entryPath(p string) (string, error) {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", buildErr("path %q must not contain ..", p)
		}
	}
	return strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(p, "./")), "/"), nil
}

func displayPath(p string) string {
	if p == "" {
		return "./"
	}
	return p
}

// cleanKustomizeError drops the work folder from kustomize's messages so
// they name paths as they are in the repository.
func cleanKustomizeError(root string, err error) string {
	src := filepath.Join(root, sourceFolder)
	overlay := filepath.Join(root, overlayFolder)
	return strings.NewReplacer(
		src+"/", "", src, "./",
		overlay+"/", "(overlay) ", overlay, "(overlay)",
		root+"/", "", root, ".",
	).Replace(err.Error())
}

// displayName names a path below root as it is in the repository.
func displayName(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	rel = filepath.ToSlash(rel)
	switch {
	case rel == sourceFolder:
		return "./"
	case strings.HasPrefix(rel, sourceFolder+"/"):
		return strings.TrimPrefix(rel, sourceFolder+"/")
	case strings.HasPrefix(rel, overlayFolder+"/"):
		return "(overlay) " + strings.TrimPrefix(rel, overlayFolder+"/")
	}
	return rel
}

// rendered is one rendered object ready for output.
type rendered struct {
	id object.ID
	// version is the id's API version, the last tie-break of the
	// canonical order and part of the object's name in messages.
	version string
	yaml    string
	// generated: the object has a generateName and no name; id.Name is
	// the generateName, and two such objects are never duplicates.
	generated bool
}

// String names the object with its API version, "autoscaling/v2
// HorizontalPodAutoscaler apps/web", so that two versions of one object
// tell apart.
func (o rendered) String() string {
	gv := o.version
	if o.id.Group != "" {
		gv = o.id.Group + "/" + o.version
	}
	if o.id.Namespace == "" {
		return fmt.Sprintf("%s %s %s", gv, o.id.Kind, o.id.Name)
	}
	return fmt.Sprintf("%s %s %s/%s", gv, o.id.Kind, o.id.Namespace, o.id.Name)
}

// finish applies commonMetadata and substitution to one object and checks
// its identity. The text is kustomize's own YAML form of the object (keys
// sorted, as `kustomize build` prints them), so it is deterministic.
func finish(res *resource.Resource, cm *kustomizev1.CommonMetadata, vars *Variables, strict bool, limits Limits, dec Decryptor) (rendered, error) {
	node := &res.RNode
	if cm != nil {
		if err := SetCommonMetadata(node, cm); err != nil {
			return rendered{}, buildErr("%s: setting commonMetadata: %v", describe(node), err)
		}
	}
	// res.AsYAML's bytes (JSONToYAML of the JSON), computed without the
	// JSON text (canonical.go).
	text, err := canonicalYAML(node)
	if err != nil {
		return rendered{}, buildErr("%s: %v", describe(node), err)
	}
	if vars != nil && !substitutionDisabled(node) && strings.Contains(text, "${") {
		out, err := Substitute(text, vars.lookup, strict)
		if err != nil {
			return rendered{}, substituteErr("%s: %v", describe(node), err)
		}
		if out.Text != text {
			parsed, perr := kyaml.Parse(out.Text)
			if perr != nil {
				return rendered{}, substituteErr("%s: not valid YAML after substitution: %s", describe(node), vars.redact(perr.Error(), out.Used))
			}
			// A value may bring aliases of its own; bound them before the
			// conversion below expands them.
			if _, err := yamlsize.Expanded(parsed.YNode(), limits.MaxNodes); err != nil {
				return rendered{}, limitErr("%s after substitution: %v", describe(node), err)
			}
			if text, err = canonicalYAML(parsed); err != nil {
				return rendered{}, substituteErr("%s: %s", describe(node), vars.redact(err.Error(), out.Used))
			}
			node = parsed
		}
	}
	if dec != nil {
		// After substitution, as in Flux: the ciphertext holds no ${…}.
		plain, decrypted, err := dec.Object(describe(node), node)
		if err != nil {
			return rendered{}, decryptErr("decrypting %v", err)
		}
		if decrypted {
			node = plain
			if text, err = canonicalYAML(node); err != nil {
				return rendered{}, decryptErr("%s after decryption: %v", describe(node), err)
			}
		}
	}
	generateName, generated, err := restoreGenerateName(node)
	if err != nil {
		return rendered{}, buildErr("%s: %v", describe(node), err)
	}
	apiVersion, kind, name := node.GetApiVersion(), node.GetKind(), node.GetName()
	if generated {
		// Printed again without the stand-in name; the id names the
		// object by its generateName, and only the sync gives it a name.
		if text, err = canonicalYAML(node); err != nil {
			return rendered{}, buildErr("%s: %v", describe(node), err)
		}
		name = generateName
	}
	if err := checkMeta(apiVersion, kind, name); err != nil {
		return rendered{}, validationErr("%v", err)
	}
	group, version := resid.ParseGroupVersion(apiVersion)
	return rendered{
		id:        object.ID{Group: group, Kind: kind, Namespace: node.GetNamespace(), Name: name},
		version:   version,
		yaml:      text,
		generated: generated,
	}, nil
}

// canonicalYAML prints a node the way kustomize prints a resource (through
// JSON, so keys come sorted), keeping substituted objects in the same form as
// the others. It is sigs.k8s.io/yaml.JSONToYAML(n.MarshalJSON()), byte for
// byte, computed without the JSON text (canonical.go).
func canonicalYAML(n *kyaml.RNode) (string, error) {
	if printsDifferently(n.YNode(), false) {
		j, err := n.MarshalJSON()
		if err != nil {
			return "", err
		}
		y, err := jsonToYAML(j)
		return string(y), err
	}
	var m map[string]any
	if err := n.YNode().Decode(&m); err != nil {
		return "", err
	}
	y, err := yamlOfJSONValue(m)
	if err != nil {
		return "", err
	}
	return string(y), nil
}

func describe(n *kyaml.RNode) string {
	id := n.GetKind() + " " + n.GetName()
	if ns := n.GetNamespace(); ns != "" {
		id = n.GetKind() + " " + ns + "/" + n.GetName()
	}
	return id
}

// substitutionDisabled reads SubstituteAnnotation, a label or an
// annotation; without it, Flux's substitute key, as Flux reads it.
func substitutionDisabled(n *kyaml.RNode) bool {
	m := flux.Maps{Labels: n.GetLabels(), Annotations: n.GetAnnotations()}
	v, set := m.Annotations[SubstituteAnnotation]
	if !set {
		v, set = m.Labels[SubstituteAnnotation]
	}
	if set {
		return v == kustomizev1.DisabledValue
	}
	return flux.SubstituteDisabled(m)
}

// SetCommonMetadata sets cm's labels and annotations on n, replacing the
// values of the same keys: a Kustomization's and a HelmRelease's
// spec.commonMetadata.
func SetCommonMetadata(n *kyaml.RNode, cm *kustomizev1.CommonMetadata) error {
	for _, k := range sortedMapKeys(cm.Labels) {
		if err := n.PipeE(kyaml.SetLabel(k, cm.Labels[k])); err != nil {
			return err
		}
	}
	for _, k := range sortedMapKeys(cm.Annotations) {
		if err := n.PipeE(kyaml.SetAnnotation(k, cm.Annotations[k])); err != nil {
			return err
		}
	}
	return nil
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (v *Variables) lookup(name string) (string, bool) {
	x, ok := (*v)[name]
	return x.Value, ok
}

// redact replaces the values of the secret variables among used in msg.
func (v *Variables) redact(msg string, used []string) string {
	for _, name := range used {
		if x := (*v)[name]; x.Secret && x.Value != "" {
			msg = strings.ReplaceAll(msg, x.Value, "<redacted:"+name+">")
		}
	}
	return msg
}

// assemble checks for duplicates, sorts into canonical order and joins the
// documents.
func assemble(objs []rendered, limits Limits) (*Result, error) {
	sort.SliceStable(objs, func(i, j int) bool { return less(objs[i], objs[j]) })
	seen := make(map[object.ID]rendered, len(objs))
	for _, o := range objs {
		if o.generated {
			continue
		}
		key := clusterKey(o.id)
		if first, dup := seen[key]; dup {
			return nil, validationErr("duplicate object %s: rendered as %s and as %s", keyText(key), first, o)
		}
		seen[key] = o
	}
	var b strings.Builder
	ids := make([]object.ID, 0, len(objs))
	for i, o := range objs {
		size := len(o.yaml)
		if i > 0 {
			size += len("---\n")
		}
		if !strings.HasSuffix(o.yaml, "\n") {
			size++
		}
		if int64(b.Len()+size) > limits.MaxOutputBytes {
			return nil, limitErr("the rendered manifests pass the limit of %d bytes (--max-rendered-size) at %s, object %d of %d",
				limits.MaxOutputBytes, o, i+1, len(objs))
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(o.yaml)
		if !strings.HasSuffix(o.yaml, "\n") {
			b.WriteByte('\n')
		}
		ids = append(ids, o.id)
	}
	out := []byte(b.String())
	return &Result{Manifests: out, Objects: ids, Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(out))}, nil
}

// clusterKey is what makes an object unique in a cluster: its id, with an
// empty namespace meaning the default one (as for kustomize).
func clusterKey(id object.ID) object.ID {
	if id.Namespace == "" {
		id.Namespace = "default"
	}
	return id
}

// keyText names a clusterKey in a duplicate error: "ConfigMap apps/settings",
// "HorizontalPodAutoscaler.autoscaling apps/web".
func keyText(k object.ID) string {
	gk := k.Kind
	if k.Group != "" {
		gk = k.Kind + "." + k.Group
	}
	return fmt.Sprintf("%s %s/%s", gk, k.Namespace, k.Name)
}

// less is the canonical order: the kind order of a sync wave (pkg/object),
// then the version.
func less(a, b rendered) bool {
	if a.id != b.id {
		return object.Less(a.id, b.id)
	}
	return a.version < b.version
}
