// Command command is a config-management plugin in Argo CD's manner: it
// runs a shell command in spec.path and answers with its standard output
// (renderplugin.Command: the env as ARGOCD_ENV_<name>, string parameters
// as PARAM_<NAME>).
//
//	command --name kustomize-helm --generate 'kustomize build --enable-helm .' --socket /plugins/kustomize-helm.sock
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"plumb.dev/pkg/renderplugin"
)

func main() {
	name := flag.String("name", "", "The plugin's name; its socket is <socket-dir>/<name>.sock.")
	socketDir := flag.String("socket-dir", "/plugins", "The folder of the sockets.")
	generate := flag.String("generate", "", "The shell command that prints the manifests (sh -c).")
	fileName := flag.String("discover-file-name", "", "A glob that must match a file in spec.path.")
	maxOutput := flag.Int64("max-output", 64<<20, "The most bytes the command may print.")
	version := flag.String("version", "", "The plugin's identity (renderplugin.Info.Version): change it when the command's output changes; empty: the digest of this program and of --generate.")
	var params []renderplugin.ParameterSpec
	flag.Func("parameter", "A parameter the plugin takes, name or name:string|array|map (repeat the flag).", func(s string) error {
		n, typ, _ := strings.Cut(s, ":")
		params = append(params, renderplugin.ParameterSpec{Name: n, Type: typ})
		return nil
	})
	flag.Parse()
	info := renderplugin.Info{Name: *name, Version: *version, Parameters: params}
	if info.Version == "" {
		// The program alone is not the plugin: the same binary runs
		// other commands.
		exe, err := renderplugin.ExecutableVersion()
		if err != nil {
			log.Fatal(err)
		}
		sum := sha256.Sum256([]byte(exe + "\x00" + *generate))
		info.Version = "sha256:" + hex.EncodeToString(sum[:])
	}
	if *fileName != "" {
		info.Discover = &renderplugin.Discover{FileName: *fileName}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := renderplugin.Serve(ctx, *socketDir+"/"+*name+".sock", &renderplugin.Plugin{
		Info: info,
		Generate: func(ctx context.Context, r *renderplugin.Render) ([]byte, error) {
			return renderplugin.Command(ctx, r, *maxOutput, "sh", "-c", *generate)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
}
