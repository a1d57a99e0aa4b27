package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderplugin"
	"plumb.dev/pkg/renderworker"
)

// pluginVersionsTimeout bounds asking the plugins their versions for the
// cache key: a plugin that does not answer within it is "absent" there,
// and its render says why.
const pluginVersionsTimeout = 5 * time.Second

// pluginCacheKey adds to key the versions of the plugins spec.plugin may
// reach (pkg/renderplugin's Info.Version: the named one, or all of them
// for a discovery), so that a plugin upgraded in place, or one added
// beside a discovering Kustomization, renders it again without a new
// commit. Asking is a GET of a few bytes per socket, on the controller's
// side of the worker: no tenant input crosses it.
func (r *KustomizationReconciler) pluginCacheKey(ctx context.Context, key string, pl *kustomizev1.Plugin) string {
	if r.PluginDir == "" {
		return key
	}
	ctx, cancel := context.WithTimeout(ctx, pluginVersionsTimeout)
	defer cancel()
	c := &renderplugin.Client{Dir: r.PluginDir}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\nplugin=%s\n%s", key, pl.Name, c.Versions(ctx, pl.Name))))
	return hex.EncodeToString(sum[:])
}

// renderByPlugin renders obj with the config-management plugin of
// spec.plugin (docs/design/plugins.md) in a render worker
// (renderworker.Pool.Plugin): the source tree of this render alone goes
// to the plugin's socket in PluginDir, and its YAML comes back through the
// render's limits, spec.patches and spec.images, and the same checks and
// canonical printing as kustomize's output; the spec fields only
// kustomize reads are refused.
func (r *KustomizationReconciler) renderByPlugin(ctx context.Context, obj *kustomizev1.Kustomization, st *state) (*render.Result, error) {
	return r.pool.Plugin(ctx, st.workDir, &obj.Spec, renderworker.PluginOptions{SocketDir: r.PluginDir, Limits: r.RenderLimits})
}
