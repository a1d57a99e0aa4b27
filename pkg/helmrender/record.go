package helmrender

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Helm's ownership metadata, which Helm writes on every object of a
// release it applies (the SDK's action.setMetadataVisitor) and checks
// before it takes an existing object into a release.
const (
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	ManagedByHelm              = "Helm"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// MaxRecordBytes bounds a release record, gzipped: Helm's Secret driver
// stores base64(gzip(JSON)) in a Secret, whose data the API server caps
// at 1 MiB, and base64 adds a third. The rest is margin for the driver's
// own compression of the same JSON.
const MaxRecordBytes = 700 << 10

// record is the part of a Helm release (release/v1.Release) a render
// knows: the chart's metadata and default values (not its templates or
// files: see docs/design/helm.md), the user's values, the manifest of the
// objects that are not hooks, the hooks and the top chart's NOTES.txt.
// sync-controller adds the name, namespace, version, status and times
// when it writes the release into Helm's storage. It is built before the
// ownership metadata is stamped, as Helm records its manifest before it
// stamps the objects.
func record(t *templated, opts Options, objs []*kyaml.RNode, sources map[string]string) (*release.Release, error) {
	config, err := copyValues(opts.Values)
	if err != nil {
		return nil, err
	}
	rel := &release.Release{
		Chart:  &chart.Chart{Metadata: t.metadata, Values: t.values},
		Config: config,
		Info:   &release.Info{Notes: t.notes},
	}
	var manifest strings.Builder
	for _, n := range objs {
		y, err := n.String()
		if err != nil {
			return nil, err
		}
		src := sources[sourceKey(n)]
		hooks, isHook := n.GetAnnotations()[release.HookAnnotation]
		if !isHook {
			manifest.WriteString("---\n")
			if src != "" {
				fmt.Fprintf(&manifest, "# Source: %s\n", src)
			}
			manifest.WriteString(y)
			continue
		}
		h := &release.Hook{Name: n.GetName(), Kind: n.GetKind(), Path: src, Manifest: y}
		for _, e := range strings.Split(hooks, ",") {
			if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
				h.Events = append(h.Events, release.HookEvent(e))
			}
		}
		h.Weight, _ = strconv.Atoi(strings.TrimSpace(n.GetAnnotations()[release.HookWeightAnnotation]))
		for _, p := range strings.Split(n.GetAnnotations()[release.HookDeleteAnnotation], ",") {
			if p = strings.TrimSpace(p); p != "" {
				h.DeletePolicies = append(h.DeletePolicies, release.HookDeletePolicy(p))
			}
		}
		rel.Hooks = append(rel.Hooks, h)
	}
	rel.Manifest = manifest.String()
	return rel, nil
}

// encodeRecord is rel as gzipped JSON within MaxRecordBytes: without the
// chart's default values when the whole does not fit (helm get values
// --all then shows the user's values only), and nil, with why, when even
// that does not.
func encodeRecord(rel *release.Release) ([]byte, string, error) {
	b, err := gzipJSON(rel)
	if err != nil || len(b) <= MaxRecordBytes {
		return b, "", err
	}
	rel.Chart.Values = nil
	if b, err = gzipJSON(rel); err != nil || len(b) <= MaxRecordBytes {
		return b, "", err
	}
	return nil, fmt.Sprintf("the release record is %d bytes gzipped, more than a release Secret holds (%d)", len(b), MaxRecordBytes), nil
}

func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sourceKey identifies an object across the post-renderers (which patch
// objects, rarely rename them) to find the template it came from.
func sourceKey(n *kyaml.RNode) string {
	return n.GetApiVersion() + "/" + n.GetKind() + "/" + n.GetNamespace() + "/" + n.GetName()
}

// stampOwnership writes Helm's ownership metadata on the objects that are
// not hooks, as Helm does on every object of a release it applies (never
// on hooks, nor on the CRDs of crds/), so that helm, or Flux's
// helm-controller, can take the release back from Plumb.
func stampOwnership(objs []*kyaml.RNode, releaseName, namespace string) error {
	for _, n := range objs {
		if _, isHook := n.GetAnnotations()[release.HookAnnotation]; isHook {
			continue
		}
		if err := n.PipeE(kyaml.SetLabel(ManagedByLabel, ManagedByHelm)); err != nil {
			return err
		}
		if err := n.PipeE(kyaml.SetAnnotation(ReleaseNameAnnotation, releaseName)); err != nil {
			return err
		}
		if err := n.PipeE(kyaml.SetAnnotation(ReleaseNamespaceAnnotation, namespace)); err != nil {
			return err
		}
	}
	return nil
}
