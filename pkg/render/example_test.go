package render_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

// Build renders a folder without a kustomization.yaml (one is generated
// listing its files) with a target namespace and a postBuild variable. The
// objects come out in the kind order of a sync wave, whatever the order of
// the files; the same input always gives the same bytes and digest.
func ExampleBuild() {
	work, err := os.MkdirTemp("", "render-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(work)
	files := map[string]string{
		"app/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: ${replicas:=1}\n",
		"app/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  env: ${env}\n",
	}
	for name, content := range files {
		p := filepath.Join(render.SourceDir(work), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Println(err)
			return
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			fmt.Println(err)
			return
		}
	}
	spec := &kustomizev1.KustomizationSpec{
		Path:            "./app",
		TargetNamespace: "shop",
		PostBuild:       &kustomizev1.PostBuild{Substitute: map[string]string{"env": "prod"}},
	}
	res, err := render.Build(context.Background(), work, spec, render.Options{
		Vars: render.Variables{"env": {Value: "prod"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Objects)
	fmt.Print(string(res.Manifests))
	// Output:
	// [ConfigMap/shop/web Deployment/shop/web]
	// apiVersion: v1
	// data:
	//   env: prod
	// kind: ConfigMap
	// metadata:
	//   name: web
	//   namespace: shop
	// ---
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: web
	//   namespace: shop
	// spec:
	//   replicas: 1
}
