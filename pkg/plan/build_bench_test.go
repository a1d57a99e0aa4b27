package plan

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkBuild plans 1,000 objects of bench-sync's shape (a third each
// ConfigMaps, headless Services and Deployments, no hooks): what
// sync-controller's hand-off pays for the plan of an artifact.
func BenchmarkBuild(b *testing.B) {
	var docs []string
	for i := range 1000 {
		name := fmt.Sprintf("app-%04d", i)
		switch i % 3 {
		case 0:
			docs = append(docs, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %[1]s, namespace: apps, labels: {app.kubernetes.io/name: bench}}, data: {key: %[1]s, settings.yaml: "name: %[1]s\nreplicas: 1\n"}}`, name))
		case 1:
			docs = append(docs, fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: %[1]s, namespace: apps}, spec: {clusterIP: None, selector: {app: %[1]s}, ports: [{name: http, port: 80, targetPort: 8080}]}}`, name))
		default:
			docs = append(docs, fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: %[1]s, namespace: apps}, spec: {replicas: 1, selector: {matchLabels: {app: %[1]s}}, template: {metadata: {labels: {app: %[1]s}}, spec: {containers: [{name: app, image: "registry.example/app:1.0", ports: [{containerPort: 8080}], resources: {requests: {cpu: 100m, memory: 64Mi}}}]}}}}`, name))
		}
	}
	in := objs(b, strings.Join(docs, "\n---\n"))
	b.ReportAllocs()
	for b.Loop() {
		p, err := Build(in, Options{SyncID: "main@sha1:abc/1"})
		if err != nil || len(p.Inventory) != 1000 {
			b.Fatalf("%d objects, %v", len(p.Inventory), err)
		}
	}
}
