package controller

import (
	"context"
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

// renderByPlugin renders obj with the config-management plugin of
// spec.plugin (docs/design/plugins.md) in a render worker: the source
// tree of this render alone goes to the plugin's socket in PluginDir, and
// its YAML comes back through the render's limits, spec.patches and
// spec.images, and the same checks and canonical printing as kustomize's
// output. The spec fields only kustomize reads are refused, so that none
// is silently ignored.
func (r *KustomizationReconciler) renderByPlugin(ctx context.Context, obj *kustomizev1.Kustomization, st *state) (*render.Result, error) {
	if unread := fieldsPluginsIgnore(&obj.Spec); len(unread) > 0 {
		return nil, render.ValidationError("spec.plugin renders without kustomize, so it cannot take %s", strings.Join(unread, ", "))
	}
	return r.pool.Plugin(ctx, st.workDir, &obj.Spec, renderworker.PluginOptions{SocketDir: r.PluginDir, Limits: r.RenderLimits})
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
