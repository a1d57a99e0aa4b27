// Command envsubst is an example config-management plugin: it prints the
// YAML files of spec.path with ${NAME} replaced by the Kustomization's
// spec.plugin.env value of NAME, leaving other text alone.
//
//	envsubst --socket /plugins/envsubst.sock
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"plumb.dev/pkg/renderplugin"
)

func main() {
	socket := flag.String("socket", "/plugins/envsubst.sock", "The unix socket to answer on.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := renderplugin.Serve(ctx, *socket, &renderplugin.Plugin{
		Info: renderplugin.Info{Name: "envsubst", Discover: &renderplugin.Discover{FileName: "*.yaml"}},
		Generate: func(ctx context.Context, r *renderplugin.Render) ([]byte, error) {
			env := map[string]string{}
			for _, e := range r.Env {
				env[e.Name] = e.Value
			}
			files, _ := filepath.Glob(filepath.Join(r.AppDir, "*.yaml"))
			var out []byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, err
				}
				out = append(out, "---\n"+os.Expand(string(b), func(k string) string {
					if v, ok := env[k]; ok {
						return v
					}
					return "${" + k + "}"
				})+"\n"...)
			}
			return out, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
}
