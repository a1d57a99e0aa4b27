package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plumb.dev/pkg/renderplugin"
)

// The example config-management plugin the launcher runs beside
// render-controller, as deploy/components/plugins runs it beside the
// controller's container (docs/design/plugins.md).
const (
	// ExamplePluginBinary is its program in Options.BinDir:
	// pkg/renderplugin/example/envsubst, built under this name (hack/run.sh,
	// the e2e tests) so that it shadows no system envsubst.
	ExamplePluginBinary = "plumb-plugin-envsubst"
	// ExamplePluginPackage is its main package.
	ExamplePluginPackage = "./pkg/renderplugin/example/envsubst"
	// ExamplePlugin is the name it answers as, and spec.plugin.name.
	ExamplePlugin = "envsubst"
	// DemoPluginObjectsFile is the sample's Kustomization rendered by it
	// (DemoOptions.Plugin), and DemoPluginDir the folder of the sample
	// repository it renders, pushed as plugin/.
	DemoPluginObjectsFile = "deploy/examples/plumb/plugin-demo.yaml"
	DemoPluginDir         = "deploy/examples/plugin"
)

// startPlugin starts the example plugin as a supervised process answering
// on envsubst.sock in the state folder's plugins/ — render-controller's
// --plugin-dir (Env.PluginDir) — with a temporary folder of its own for
// the trees it is sent, and waits until it answers. Without its binary in
// BinDir nothing starts and render-controller gets no --plugin-dir: the
// sample's plugin part (DemoOptions.Plugin) then cannot render.
func (e *Env) startPlugin(ctx context.Context) error {
	bin := filepath.Join(e.opts.BinDir, ExamplePluginBinary)
	if _, err := os.Stat(bin); err != nil {
		e.progress("no example plugin (%s is not built): render-controller runs without --plugin-dir", bin)
		return nil
	}
	dir := filepath.Join(e.StateDir, "plugins")
	tmp := filepath.Join(e.StateDir, "plugin-"+ExamplePlugin+"-tmp")
	for _, d := range []string{dir, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	e.Plugin = &Process{
		Name:       "plugin-" + ExamplePlugin,
		Path:       bin,
		Args:       []string{"--socket=" + filepath.Join(dir, ExamplePlugin+".sock")},
		Env:        []string{"TMPDIR=" + tmp},
		LogPath:    filepath.Join(e.StateDir, "logs", "plugin-"+ExamplePlugin+".log"),
		Supervised: true,
	}
	e.progress("starting the example plugin %s", ExamplePlugin)
	if err := e.Plugin.Start(); err != nil {
		return err
	}
	client := &renderplugin.Client{Dir: dir}
	for {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.Info(ictx, ExamplePlugin)
		cancel()
		if err == nil {
			e.PluginDir = dir
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the example plugin did not answer on %s (%v); the end of its log %s:\n%s",
				client.Socket(ExamplePlugin), err, e.Plugin.LogPath, Tail(e.Plugin.LogPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
