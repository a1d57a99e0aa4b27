package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/reconcile"
)

// workload is a kind of generated object set.
type workload string

const (
	// mixed is a third each of ConfigMaps, headless Services and Deployments.
	mixed workload = "mixed"
	// configMaps is ConfigMaps only, the case of docs/design/sync-engine.md's targets.
	configMaps workload = "configmaps"
)

func (w workload) describe(n int) string {
	if w == mixed {
		return fmt.Sprintf("%d mixed objects", n)
	}
	return fmt.Sprintf("%d ConfigMaps", n)
}

// kindOf says which kind the i-th object of a workload is.
func (w workload) kindOf(i int) string {
	if w == configMaps {
		return "ConfigMap"
	}
	return [...]string{"ConfigMap", "Service", "Deployment"}[i%3]
}

// objectName is the name of the i-th object.
func objectName(kind string, i int) string {
	return fmt.Sprintf("%s-%04d", strings.ToLower(kind), i)
}

// manifests renders the workload's n objects in namespace ns as a
// multi-document YAML stream, what render-controller would serve.
func manifests(w workload, ns string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		kind := w.kindOf(i)
		name := objectName(kind, i)
		switch kind {
		case "ConfigMap":
			fmt.Fprintf(&b, `apiVersion: v1
kind: ConfigMap
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app.kubernetes.io/name: bench, app.kubernetes.io/component: %[2]s}
data:
  key: %[2]s
  settings.yaml: |
    name: %[2]s
    replicas: 1
    features: [alpha, beta, gamma]
    endpoint: https://example.invalid/%[2]s
`, ns, name)
		case "Service":
			// Headless: envtest's service CIDR is a /24, and namespaces are
			// never deleted, so ClusterIPs would run out across runs.
			fmt.Fprintf(&b, `apiVersion: v1
kind: Service
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app.kubernetes.io/name: bench, app.kubernetes.io/component: %[2]s}
spec:
  clusterIP: None
  selector: {app: %[2]s}
  ports:
  - name: http
    port: 80
    targetPort: 8080
`, ns, name)
		case "Deployment":
			fmt.Fprintf(&b, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app.kubernetes.io/name: bench, app.kubernetes.io/component: %[2]s}
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: app
        image: registry.example/app:1.0
        ports:
        - containerPort: 8080
        resources:
          requests: {cpu: 100m, memory: 64Mi}
`, ns, name)
		}
	}
	return b.String()
}

// decode reads a YAML stream into objects.
func decode(data string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// bareObjects are the workload's objects as the bare loop applies them:
// stamped like sync-controller stamps its objects (two labels and a hash
// annotation of the same sizes), under keys sync-controller does not watch,
// so the bare loop's objects stay out of the controller's informers.
func bareObjects(w workload, ns string, n int) ([]*unstructured.Unstructured, error) {
	return stamped(manifests(w, ns, n), ns)
}

// stamped decodes a YAML stream of objects in ns and stamps them as
// bareObjects says, in the canonical order of pkg/object (kinds in the
// order of a sync wave): the order every render delivers and
// sync-controller applies in. The mixed workload's stream interleaves its
// kinds; applied in that order, the bare loop costs the API server more
// than in kind order (docs/bench/sync.md, "Is the bare loop fair?"), and
// the unshaped figures were measured against a slower loop than the
// shapes'.
func stamped(data, ns string) ([]*unstructured.Unstructured, error) {
	objs, err := decode(data)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(objs, func(i, j int) bool { return object.Less(object.IDOf(objs[i]), object.IDOf(objs[j])) })
	for _, o := range objs {
		labels := o.GetLabels()
		labels["bench.plumb.dev/name"] = "app"
		labels["bench.plumb.dev/namespace"] = ns
		o.SetLabels(labels)
		sum := sha256.Sum256([]byte(o.GetName()))
		o.SetAnnotations(map[string]string{"bench.plumb.dev/hashed": "sha256:" + hex.EncodeToString(sum[:])})
	}
	return objs, nil
}

// artifactServer stands in for render-controller's artifact server.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	// served is the last download's span: the hand-off of the timeline
	// is split at it.
	served span
}

// span is when something started and ended.
type span struct{ start, end time.Time }

// lastDownload is the span of the last artifact served.
func (a *artifactServer) lastDownload() span {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.served
}

func newArtifactServer() *artifactServer {
	a := &artifactServer{files: map[string][]byte{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		a.mu.Lock()
		data, ok := a.files[r.URL.Path]
		a.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
		a.mu.Lock()
		a.served = span{start: start, end: time.Now()}
		a.mu.Unlock()
	}))
	return a
}

// render does render-controller's part: it serves the manifests and points
// the Kustomization's status at them with Rendered=True for its generation.
func (a *artifactServer) render(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, revision, data string) error {
	sum := sha256.Sum256([]byte(data))
	path := fmt.Sprintf("/kustomization/%s/%s/%s.yaml", ks.Namespace, ks.Name, hex.EncodeToString(sum[:8]))
	a.mu.Lock()
	a.files[path] = []byte(data)
	a.mu.Unlock()

	current := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ks), current); err != nil {
		return err
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	status := map[string]any{
		"renderedArtifact": map[string]any{
			"path": path, "url": a.URL + path, "revision": revision,
			"digest": "sha256:" + hex.EncodeToString(sum[:]), "size": int64(len(data)), "lastUpdateTime": now,
		},
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason,
			"message": "rendered " + revision, "observedGeneration": current.Generation, "lastTransitionTime": now,
		}},
	}
	return reconcile.ApplyStatus(ctx, c, current, "plumb-render", status)
}
