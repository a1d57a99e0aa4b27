package main

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/testhelm"
)

// The floor writes what the chart renders with the install's values: the
// same objects, but for the Pod template's checksum, which only serves the
// upgrade's rollout (pkg/helmrender, Plumb's render, which Flux's Helm
// SDK render matches: pkg/helmrender's TestGoldenHelmTemplate).
func TestTheFloorWritesWhatTheChartRenders(t *testing.T) {
	g := NewWithT(t)
	tgz, err := testhelm.Package(benchChart)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := helmrender.Render(context.Background(), tgz, helmrender.Options{ReleaseName: "app-0003", Namespace: "floor-0003", IsInstall: true})
	g.Expect(err).NotTo(HaveOccurred())

	var rendered []string
	for _, doc := range strings.Split(string(res.Manifests), "\n---\n") {
		var m map[string]any
		g.Expect(yaml.Unmarshal([]byte(doc), &m)).To(Succeed())
		if len(m) == 0 {
			continue
		}
		spec, _ := m["spec"].(map[string]any)
		if tmpl, ok := spec["template"].(map[string]any); ok {
			meta := tmpl["metadata"].(map[string]any)
			g.Expect(meta["annotations"]).To(HaveKey("checksum/config"))
			delete(meta, "annotations")
		}
		rendered = append(rendered, canonical(g, m))
	}
	var floor []string
	for _, o := range floorObjects("floor-0003", "app-0003") {
		g.Expect(o.GetNamespace()).To(Equal("floor-0003"))
		m := o.DeepCopy().Object
		delete(m["metadata"].(map[string]any), "namespace") // set at apply, not by the templates
		floor = append(floor, canonical(g, m))
	}
	g.Expect(rendered).To(HaveLen(3))
	sort.Strings(rendered)
	sort.Strings(floor)
	g.Expect(floor).To(Equal(rendered))
}

// canonical is an object as JSON, numbers and key order as the API server
// would see them.
func canonical(g Gomega, m map[string]any) string {
	data, err := json.Marshal(m)
	g.Expect(err).NotTo(HaveOccurred())
	var back map[string]any
	g.Expect(json.Unmarshal(data, &back)).To(Succeed())
	data, err = json.Marshal(back)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}
