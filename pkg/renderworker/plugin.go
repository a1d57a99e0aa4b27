package renderworker

import (
	"context"
	"errors"
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderplugin"
)

// PluginOptions are Plugin's arguments besides the spec.
type PluginOptions struct {
	// SocketDir holds the plugins' sockets (--plugin-dir).
	SocketDir string
	Limits    render.Limits
}

// pluginRequest is a render by a config-management plugin: the worker
// sends the source tree in WorkDir's source folder to the plugin's
// socket and makes its answer a render (pluginRender).
type pluginRequest struct {
	WorkDir   string                        `json:"workDir"`
	SocketDir string                        `json:"socketDir"`
	Spec      kustomizev1.KustomizationSpec `json:"spec"`
	Limits    render.Limits                 `json:"limits"`
}

// Plugin renders spec.path with the plugin spec.plugin names (or
// discovers, without a name), in a worker: the exchange with the plugin,
// then its YAML through the same budgets, patches and images, checks and
// canonical printing as a kustomize build. Its errors are Kustomize's;
// the plugin's own failure is BuildFailed with its sanitised stderr. The
// spec fields only kustomize reads are refused (ValidationFailed), so
// that none is silently ignored.
func (p *Pool) Plugin(ctx context.Context, workDir string, spec *kustomizev1.KustomizationSpec, opts PluginOptions) (*render.Result, error) {
	if spec.Plugin == nil {
		return nil, errors.New("the spec names no plugin")
	}
	if unread := fieldsPluginsIgnore(spec); len(unread) > 0 {
		return nil, render.ValidationError("spec.plugin renders without kustomize, so it cannot take %s", strings.Join(unread, ", "))
	}
	req := &request{Plugin: &pluginRequest{WorkDir: workDir, SocketDir: opts.SocketDir, Spec: *spec, Limits: opts.Limits}}
	resp, manifests, err := p.do(ctx, req, nil, opts.Limits.MaxOutputBytes)
	if err != nil {
		return nil, err
	}
	return &render.Result{Manifests: manifests, Objects: resp.IDs, Digest: resp.Digest}, nil
}

func pluginRender(ctx context.Context, req *pluginRequest) (*response, []byte) {
	res, err := renderByPlugin(ctx, req)
	if err != nil {
		return &response{Error: errorOf(err)}, nil
	}
	return &response{IDs: res.Objects, Digest: res.Digest}, res.Manifests
}

func renderByPlugin(ctx context.Context, req *pluginRequest) (*render.Result, error) {
	if req.SocketDir == "" {
		return nil, render.BuildError("this render-controller has no plugins (--plugin-dir)")
	}
	limits := req.Limits
	maxOut := limits.MaxOutputBytes
	if maxOut <= 0 {
		maxOut = render.DefaultMaxOutputBytes
	}
	pl := req.Spec.Plugin
	client := &renderplugin.Client{Dir: req.SocketDir}
	source := render.SourceDir(req.WorkDir)
	preq := &renderplugin.Request{Path: req.Spec.Path, Env: pl.Env, Parameters: pl.Parameters}
	info, err := pluginInfo(ctx, client, pl.Name, preq, source)
	if err != nil {
		return nil, pluginErr(ctx, err, maxOut)
	}
	if err := info.Check(preq, source); err != nil {
		return nil, render.BuildError("%v", err)
	}
	out, err := client.Render(ctx, info.Name, preq, source, maxOut)
	if err != nil {
		return nil, pluginErr(ctx, err, maxOut)
	}
	b := render.NewBudget(limits)
	objs, err := b.Parse("the output of plugin "+info.Name, out)
	if err != nil {
		return nil, err
	}
	if objs, err = render.PostRender(ctx, objs, req.Spec.Patches, req.Spec.Images); err != nil {
		return nil, err
	}
	return render.Assemble(ctx, objs, limits)
}

// pluginInfo asks the plugin name what it takes; with no name (Argo
// CD's plugin source without one) it asks every plugin and takes the one
// whose discover rule matches path, which must be exactly one.
func pluginInfo(ctx context.Context, client *renderplugin.Client, name string, req *renderplugin.Request, source string) (*renderplugin.Info, error) {
	if name != "" {
		return client.Info(ctx, name)
	}
	return client.Discover(ctx, req, source)
}

// pluginErr says what went wrong with a plugin as a render error.
func pluginErr(ctx context.Context, err error, maxOut int64) error {
	var f *renderplugin.Failure
	switch {
	case ctx.Err() != nil:
		return render.DeadlineError(ctx)
	case errors.Is(err, renderplugin.ErrOutputTooLarge):
		return render.LimitError("the plugin's output passes the limit of %d bytes of rendered manifests (--max-rendered-size)", maxOut)
	case errors.As(err, &f):
		return render.BuildError("the plugin failed: %v", f)
	}
	return render.BuildError("%v", err)
}

// fieldsPluginsIgnore names the fields of spec that a plugin render would
// not apply.
func fieldsPluginsIgnore(spec *kustomizev1.KustomizationSpec) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"spec.targetNamespace", spec.TargetNamespace != ""},
		{"spec.namePrefix", spec.NamePrefix != ""},
		{"spec.nameSuffix", spec.NameSuffix != ""},
		{"spec.components", len(spec.Components) > 0},
		{"spec.buildMetadata", len(spec.BuildMetadata) > 0},
		{"spec.commonMetadata", spec.CommonMetadata != nil},
		{"spec.postBuild", spec.PostBuild != nil},
		{"spec.decryption", spec.Decryption != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}
