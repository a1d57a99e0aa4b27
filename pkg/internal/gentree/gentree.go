// Package gentree writes a generated kustomization tree for benchmarks: a
// base of n objects (ConfigMaps, Deployments and Services in files of 50)
// and an overlays/prod overlay with a namespace, a name prefix, labels, an
// image override and strategic-merge and JSON 6902 patches.
package gentree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OverlayPath is the overlay's folder relative to the tree's root.
const OverlayPath = "overlays/prod"

// Write generates the tree with n objects under dir.
func Write(dir string, n int) error {
	base := filepath.Join(dir, "base")
	overlay := filepath.Join(dir, filepath.FromSlash(OverlayPath))
	for _, d := range []string{base, overlay} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var files []string
	var b strings.Builder
	flush := func(i int) error {
		if b.Len() == 0 {
			return nil
		}
		name := fmt.Sprintf("objects-%04d.yaml", i)
		files = append(files, name)
		err := os.WriteFile(filepath.Join(base, name), []byte(b.String()), 0o644)
		b.Reset()
		return err
	}
	for i := 0; i < n; i++ {
		if i > 0 && i%50 == 0 {
			if err := flush(i / 50); err != nil {
				return err
			}
		}
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		switch i % 10 {
		case 0, 1, 2, 3:
			fmt.Fprintf(&b, configMap, i, i, i)
		case 4, 5, 6:
			fmt.Fprintf(&b, deployment, i, i, i, i, i%7)
		default:
			fmt.Fprintf(&b, service, i, i)
		}
	}
	if err := flush(n/50 + 1); err != nil {
		return err
	}
	baseK := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, f := range files {
		baseK += "- " + f + "\n"
	}
	if err := os.WriteFile(filepath.Join(base, "kustomization.yaml"), []byte(baseK), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(overlayK), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(overlay, "replicas.yaml"), []byte(replicasPatch), 0o644)
}

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: config-%04d
  labels: {app: app-%04d}
data:
  index: "%d"
  settings.yaml: |
    log: info
    feature: true
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%04d
  labels: {app: app-%04d}
spec:
  replicas: 1
  selector:
    matchLabels: {app: app-%04d}
  template:
    metadata:
      labels: {app: app-%04d}
    spec:
      containers:
      - name: app
        image: registry.example/app:v1.%d
        ports:
        - containerPort: 8080
        resources:
          requests: {cpu: 10m, memory: 16Mi}
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: svc-%04d
spec:
  selector: {app: app-%04d}
  ports:
  - port: 80
    targetPort: 8080
`

const overlayK = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
namePrefix: prod-
resources:
- ../../base
labels:
- pairs: {env: prod}
images:
- name: registry.example/app
  newName: registry.example/app-prod
  newTag: v2.0.0
patches:
- path: replicas.yaml
  target:
    kind: Deployment
- patch: |-
    - op: add
      path: /metadata/annotations
      value: {team: platform}
  target:
    kind: Service
`

const replicasPatch = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: any
spec:
  replicas: 3
`

// PlainPath is the folder WritePlain writes, relative to the tree's root:
// a folder without a kustomization file, as a Kustomization's spec.path
// often is.
const PlainPath = "plain"

// WritePlain writes n ConfigMaps under dir/PlainPath, perFile to a file,
// without a kustomization file. With kustomization set it also writes one
// listing the files, which renders the same objects through kustomize.
func WritePlain(dir string, n, perFile int, kustomization bool) error {
	plain := filepath.Join(dir, PlainPath)
	if err := os.MkdirAll(plain, 0o755); err != nil {
		return err
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	var b strings.Builder
	for i := 0; i < n; i++ {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, configMap, i, i, i)
		if (i+1)%perFile == 0 || i == n-1 {
			name := fmt.Sprintf("objects-%04d.yaml", i/perFile)
			k += "- " + name + "\n"
			if err := os.WriteFile(filepath.Join(plain, name), []byte(b.String()), 0o644); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if !kustomization {
		return nil
	}
	return os.WriteFile(filepath.Join(plain, "kustomization.yaml"), []byte(k), 0o644)
}
