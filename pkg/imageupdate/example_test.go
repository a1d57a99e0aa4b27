package imageupdate_test

import (
	"context"
	"fmt"
	"io"

	"github.com/go-git/go-billy/v5/memfs"

	"plumb.dev/pkg/imageupdate"
)

func ExampleSetters() {
	tree := memfs.New()
	f, _ := tree.Create("apps/deploy.yaml")
	_, _ = io.WriteString(f, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.0.0   # {"$imagepolicy": "apps:app"}
---
apiVersion: helm.plumb.dev/v2
kind: HelmRelease
metadata:
  name: sidecar
spec:
  values:
    image:
      repository: ghcr.io/org/sidecar # {"$imagepolicy": "apps:sidecar:name"}
      tag: '0.1' # {"$imagepolicy": "apps:sidecar:tag"}
`)
	_ = f.Close()

	refs := map[string]imageupdate.ImageRef{
		"apps:app":     {Name: "ghcr.io/org/app", Tag: "1.1.0"},
		"apps:sidecar": {Name: "ghcr.io/org/sidecar", Tag: "0.2"},
	}
	res, err := imageupdate.Setters(context.Background(), tree, "apps", refs, imageupdate.Limits{})
	if err != nil {
		panic(err)
	}
	for _, c := range res.Changes() {
		fmt.Printf("%s: %s -> %s\n", c.Setter, c.OldValue, c.NewValue)
	}
	f, _ = tree.Open("apps/deploy.yaml")
	b, _ := io.ReadAll(f)
	fmt.Print(string(b))
	// Output:
	// apps:app: ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.1.0
	// apps:sidecar:tag: 0.1 -> 0.2
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: app
	// spec:
	//   template:
	//     spec:
	//       containers:
	//         - name: app
	//           image: ghcr.io/org/app:1.1.0   # {"$imagepolicy": "apps:app"}
	// ---
	// apiVersion: helm.plumb.dev/v2
	// kind: HelmRelease
	// metadata:
	//   name: sidecar
	// spec:
	//   values:
	//     image:
	//       repository: ghcr.io/org/sidecar # {"$imagepolicy": "apps:sidecar:name"}
	//       tag: '0.2' # {"$imagepolicy": "apps:sidecar:tag"}
}
