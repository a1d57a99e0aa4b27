package helmrender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutilcommon "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/render"
)

// Capabilities are the cluster's, as the templates see them in
// .Capabilities.
type Capabilities struct {
	// KubeVersion is the server's version, "v1.37.2"; empty takes Helm's
	// default (what `helm template` uses without --kube-version).
	KubeVersion string
	// APIVersions are the served API versions, in both of Helm's forms:
	// "apps/v1" and "apps/v1/Deployment". Empty takes Helm's default set
	// (the built-in API versions of the SDK's client-go), as `helm
	// template` does; otherwise it is the whole set, with nothing added.
	APIVersions []string
}

// Options say how to render one chart.
type Options struct {
	// ReleaseName and Namespace are .Release.Name and .Release.Namespace.
	ReleaseName, Namespace string
	// Values are the merged user values (valuesFrom in order, then
	// spec.values); the chart's own values are the base they are
	// coalesced over, as Helm does. Render does not change the map.
	Values map[string]any
	// Capabilities are .Capabilities.
	Capabilities Capabilities
	// IsInstall sets .Release.IsInstall (true) or .Release.IsUpgrade
	// (false).
	IsInstall bool
	// Revision is .Release.Revision: the version the release will have,
	// one more than the newest of its history (an adopted release's
	// included). 0 is 1, a first install's.
	Revision int
	// CRDs is the policy for the chart's crds/ folders (its subcharts'
	// included): helmv2.CRDsSkip, CRDsCreate or CRDsCreateReplace. Empty
	// is Helm's default: Create on an install, Skip on an upgrade.
	CRDs string
	// PostRenderers change the templates' objects (hooks included, the
	// CRDs of crds/ not, as in Helm), in order.
	PostRenderers []helmv2.PostRenderer
	// CommonMetadata's labels and annotations are set on the templates'
	// objects (hooks included, the CRDs of crds/ not) after the
	// post-renderers, overriding the same keys: a HelmRelease's
	// spec.commonMetadata, which Flux applies as a last post-renderer.
	CommonMetadata *kustomizev1.CommonMetadata
	// Limits bound the render; zero fields take the defaults.
	Limits Limits
	// Record makes the render a release's, as Helm applies one: Helm's
	// ownership metadata on the objects that are not hooks
	// (stampOwnership), and the release's record in Result.Record.
	Record bool

	// DisableSchemaValidation leaves the values unchecked against the
	// values.schema.json files (a HelmRelease's
	// install/upgrade.disableSchemaValidation, Helm's
	// --skip-schema-validation).
	DisableSchemaValidation bool
}

// Result is a successful render.
type Result struct {
	// Manifests is one multi-document YAML stream in pkg/render's canonical
	// order and form, as a Kustomization's rendered artifact.
	Manifests []byte
	// Digest is "sha256:<hex>" of Manifests.
	Digest string
	// ChartName and ChartVersion are the chart's, from Chart.yaml.
	ChartName, ChartVersion string
	// ConfigDigest is helmv2.ConfigDigest(opts.Values).
	ConfigDigest string
	// Objects is how many objects Manifests holds; IDs names them in
	// order.
	Objects int
	IDs     []object.ID
	// Record is the release's record for Helm's storage, gzipped JSON of
	// a release/v1.Release holding what a render knows (see record), at
	// most MaxRecordBytes; nil without Options.Record, or when it would
	// not fit, RecordOmitted then saying why.
	Record        []byte
	RecordOmitted string
}

// notesFileSuffix ends the names of NOTES.txt templates, which are text
// for a terminal, not objects (the SDK's action.notesFileSuffix).
const notesFileSuffix = "NOTES.txt"

// Render renders a packaged chart as `helm template` does, then applies the
// post-renderers and prints the objects as pkg/render prints a
// Kustomization's; see the package documentation for the steps and the
// sandbox. ctx bounds its time: when it ends, Render returns at once with
// a LimitExceeded error. Every error is a *render.Error.
func Render(ctx context.Context, chartArchive []byte, opts Options) (*Result, error) {
	res, err := renderChart(ctx, chartArchive, opts)
	if err != nil {
		var e *render.Error
		if !errors.As(err, &e) {
			err = render.BuildError("%v", err)
		}
		return nil, err
	}
	return res, nil
}

func renderChart(ctx context.Context, archive []byte, opts Options) (*Result, error) {
	limits := opts.Limits.withDefaults()
	// As Install does first (availableName).
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, render.BuildError("release name %q: %v", opts.ReleaseName, err)
	}
	crdPolicy, err := crdPolicy(opts)
	if err != nil {
		return nil, err
	}
	caps, err := capabilities(opts.Capabilities)
	if err != nil {
		return nil, err
	}
	valuesJSON, err := helmv2.ConfigJSON(opts.Values)
	if err != nil {
		return nil, render.BuildError("the values do not encode as JSON: %v", err)
	}
	if int64(len(valuesJSON)) > limits.MaxValuesBytes {
		return nil, render.LimitError("the values are %d bytes as JSON, more than the limit of %d (--max-values-size)",
			len(valuesJSON), limits.MaxValuesBytes)
	}
	if err := CheckArchive(archive, limits); err != nil {
		var l *archiveLimitError
		if errors.As(err, &l) && l.flag != "" {
			return nil, render.LimitError("%w (%s)", err, l.flag)
		}
		return nil, err
	}

	// The SDK's loader and engine take no context and cannot be stopped:
	// they run in a goroutine that Render abandons at the deadline (see the
	// package documentation for what that leaves).
	type outcome struct {
		out *templated
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: render.BuildError("the chart broke the Helm SDK: %v", p)}
			}
		}()
		out, err := template(ctx, archive, opts, caps, limits)
		done <- outcome{out, err}
	}()
	var t *templated
	select {
	case o := <-done:
		if o.err != nil {
			return nil, o.err
		}
		t = o.out
	case <-ctx.Done():
		return nil, render.DeadlineError(ctx)
	}

	// The templates' documents and, unless skipped, the crds/ files, in
	// one concurrent parse within one budget.
	docs := t.manifests
	if crdPolicy != helmv2.CRDsSkip {
		docs = append(docs[:len(docs):len(docs)], t.crds...)
	}
	sources := make([]string, len(docs))
	data := make([][]byte, len(docs))
	for i, d := range docs {
		sources[i], data[i] = d.source, []byte(d.content)
	}
	budget := render.NewBudget(limits.renderLimits())
	parsed, err := budget.ParseAll(sources, data)
	if err != nil {
		return nil, err
	}
	var objs, crds []*kyaml.RNode
	templates := map[string]string{}
	for i, nodes := range parsed {
		crd := i >= len(t.manifests)
		for _, n := range nodes {
			if !crd && !keptHook(n) {
				continue
			}
			if err := checkMeta(sources[i], n); err != nil {
				return nil, err
			}
			if !crd {
				objs = append(objs, n)
				templates[sourceKey(n)] = sources[i]
				continue
			}
			if err := annotateCRD(n, crdPolicy); err != nil {
				return nil, render.BuildError("%s: %v", sources[i], err)
			}
			crds = append(crds, n)
		}
	}
	// Kustomize expands a patch's aliases and copies it into every
	// object it targets: each patch is charged to the render's budget
	// before it runs, as often as it may apply, and each post-renderer's
	// output to a budget of its own (it replaces its input).
	for i, pr := range opts.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		for j, p := range pr.Kustomize.Patches {
			copies := int64(1)
			if p.Target != nil {
				copies = int64(len(objs))
			}
			if err := budget.Charge(fmt.Sprintf("post-renderer %d: patch %d", i+1, j+1), []byte(p.Patch), copies); err != nil {
				return nil, err
			}
		}
		if objs, err = render.PostRender(ctx, objs, pr.Kustomize.Patches, pr.Kustomize.Images); err != nil {
			return nil, wrapReason(err, "post-renderer %d: ", i+1)
		}
		if err := render.NewBudget(limits.renderLimits()).ChargeObjects(fmt.Sprintf("post-renderer %d output", i+1), objs); err != nil {
			return nil, err
		}
	}
	if cm := opts.CommonMetadata; cm != nil {
		for _, n := range objs {
			if err := render.SetCommonMetadata(n, cm); err != nil {
				return nil, render.BuildError("commonMetadata: %s: %v", n.GetName(), err)
			}
		}
	}
	var rec []byte
	var omitted string
	if opts.Record {
		rel, err := record(t, opts, objs, templates)
		if err != nil {
			return nil, render.BuildError("recording the release: %v", err)
		}
		if rec, omitted, err = encodeRecord(rel); err != nil {
			return nil, render.BuildError("recording the release: %v", err)
		}
		if err := stampOwnership(objs, opts.ReleaseName, opts.Namespace); err != nil {
			return nil, render.BuildError("writing Helm's ownership metadata: %v", err)
		}
	}
	objs = append(objs, crds...)
	res, err := render.Assemble(ctx, objs, limits.renderLimits())
	if err != nil {
		return nil, err
	}
	return &Result{
		Manifests:     res.Manifests,
		Digest:        res.Digest,
		ChartName:     t.chartName,
		ChartVersion:  t.chartVersion,
		ConfigDigest:  helmv2.ConfigDigest(opts.Values),
		Objects:       len(res.Objects),
		IDs:           res.Objects,
		Record:        rec,
		RecordOmitted: omitted,
	}, nil
}

// wrapReason prefixes err's message and keeps its reason.
func wrapReason(err error, format string, args ...any) error {
	return &render.Error{Reason: render.Reason(err), Err: fmt.Errorf(format+"%w", append(args, err)...)}
}

func crdPolicy(opts Options) (string, error) {
	switch opts.CRDs {
	case helmv2.CRDsSkip, helmv2.CRDsCreate, helmv2.CRDsCreateReplace:
		return opts.CRDs, nil
	case "":
		if opts.IsInstall {
			return helmv2.CRDsCreate, nil
		}
		return helmv2.CRDsSkip, nil
	}
	return "", render.BuildError("unknown CRD policy %q: want %s, %s or %s", opts.CRDs, helmv2.CRDsSkip, helmv2.CRDsCreate, helmv2.CRDsCreateReplace)
}

// capabilities are Helm's .Capabilities from the options: Helm's defaults
// where they are empty, as `helm template` without --kube-version and
// --api-versions.
func capabilities(c Capabilities) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if c.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(c.KubeVersion)
		if err != nil {
			return nil, render.BuildError("invalid Kubernetes version %q: %v", c.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if len(c.APIVersions) > 0 {
		caps.APIVersions = append(common.VersionSet(nil), c.APIVersions...)
	}
	return caps, nil
}

// templated is what the SDK rendered: the documents of the templates,
// manifests and hooks, each with the template it came from
// (splitTemplates), and the CRDs of crds/.
type templated struct {
	chartName, chartVersion string
	// metadata, values and notes are the chart's Chart.yaml, its default
	// values and the top chart's rendered NOTES.txt, for the record.
	metadata  *chart.Metadata
	values    map[string]any
	notes     string
	manifests []document
	crds      []document
}

type document struct {
	source, content string
}

// template loads the chart and runs the SDK's steps of `helm template`
// (action.Install in client-only dry-run mode, action.renderResources),
// in the same order, with the SDK's own functions. See doc.go for why
// they are called one by one.
func template(ctx context.Context, archive []byte, opts Options, caps *common.Capabilities, limits Limits) (*templated, error) {
	charter, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, render.BuildError("loading the chart: %v", err)
	}
	chrt, ok := charter.(*chart.Chart)
	if !ok {
		return nil, render.BuildError("loading the chart: only charts of apiVersion v1 and v2 can be rendered")
	}
	out := &templated{chartName: chrt.Name(), chartVersion: chrt.Metadata.Version, metadata: chrt.Metadata, values: chrt.Values}

	// The user's map is not the SDK's to change.
	vals, err := copyValues(opts.Values)
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(chrt, vals); err != nil {
		return nil, render.BuildError("chart dependencies processing failed: %v", err)
	}
	release := common.ReleaseOptions{
		Name:      opts.ReleaseName,
		Namespace: opts.Namespace,
		Revision:  max(opts.Revision, 1),
		IsInstall: opts.IsInstall,
		IsUpgrade: !opts.IsInstall,
	}
	// The SDK's schema validation loads $refs from files and URLs; it is
	// done by validateSchemas instead, which loads nothing.
	top, err := chartutilcommon.ToRenderValuesWithSchemaValidation(chrt, vals, release, caps, true)
	if err != nil {
		return nil, render.BuildError("coalescing the values: %v", err)
	}
	if !opts.DisableSchemaValidation {
		if err := validateSchemas(chrt, top["Values"].(common.Values)); err != nil {
			return nil, render.BuildError("values don't meet the specifications of the schema(s) in the following chart(s):\n%v", err)
		}
	}
	if chrt.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, render.BuildError("chart requires kubeVersion: %s which is incompatible with Kubernetes %s",
			chrt.Metadata.KubeVersion, caps.KubeVersion.Version)
	}

	// No lookup (no client), no DNS: the engine reaches nothing. The YAML
	// functions are the SDK's without their JSON round trip (funcs.go).
	e := engine.Engine{EnableDNS: false, CustomTemplateFuncs: templateFuncs()}
	files, err := e.RenderWithContext(ctx, chrt, top)
	if err != nil {
		return nil, render.BuildError("%v", err)
	}
	var size int64
	for name, content := range files {
		if strings.HasSuffix(name, notesFileSuffix) {
			// Helm keeps the top chart's only (without --render-subchart-notes).
			if name == path.Join(chrt.Name(), "templates", notesFileSuffix) {
				out.notes = content
			}
			delete(files, name)
			continue
		}
		size += int64(len(content))
	}
	if size > limits.MaxOutputBytes {
		return nil, render.LimitError("the chart's templates rendered %d bytes, more than the limit of %d (--max-rendered-size)", size, limits.MaxOutputBytes)
	}
	out.manifests = splitTemplates(files)
	for _, crd := range chrt.CRDObjects() {
		out.crds = append(out.crds, document{source: crd.Filename, content: string(crd.File.Data)})
	}
	return out, nil
}

// copyValues deep-copies values through JSON, so ProcessDependencies
// cannot change the caller's map. Numbers become float64, which is what
// they are in values Helm reads from YAML (values files, valuesFrom).
func copyValues(values map[string]any) (common.Values, error) {
	if values == nil {
		return common.Values{}, nil
	}
	var v common.Values
	j, err := json.Marshal(values)
	if err != nil {
		return nil, render.BuildError("the values do not encode as JSON: %v", err)
	}
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, render.BuildError("the values do not decode: %v", err)
	}
	return v, nil
}

// checkMeta refuses an object without apiVersion, kind or a name (or a
// generateName), naming the template it came from.
func checkMeta(source string, n *kyaml.RNode) error {
	apiVersion, kind, name := n.GetApiVersion(), n.GetKind(), n.GetName()
	if name == "" {
		if gen, _ := n.Pipe(kyaml.Lookup("metadata", "generateName")); gen != nil {
			name = kyaml.GetValue(gen)
		}
	}
	switch {
	case apiVersion == "":
		return render.ValidationError("%s: %s %q has no apiVersion", source, orObject(kind), name)
	case kind == "":
		return render.ValidationError("%s: object %q (%s) has no kind", source, name, apiVersion)
	case name == "":
		return render.ValidationError("%s: %s %s has no metadata.name", source, apiVersion, kind)
	}
	return nil
}

func orObject(kind string) string {
	if kind == "" {
		return "object"
	}
	return kind
}

// annotateCRD marks a CRD of crds/: never pruned (Helm never deletes
// them), and with policy Create, created when missing and never changed.
func annotateCRD(n *kyaml.RNode, policy string) error {
	if err := n.PipeE(kyaml.SetAnnotation(kustomizev1.PruneAnnotation, kustomizev1.DisabledValue)); err != nil {
		return err
	}
	if policy == helmv2.CRDsCreate {
		return n.PipeE(kyaml.SetAnnotation(kustomizev1.SSAAnnotation, kustomizev1.IfNotPresentValue))
	}
	return nil
}
