package diff

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestHash(t *testing.T) {
	g := NewWithT(t)
	base := `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, labels: {a: "1", b: "2"}}
data: {x: "1", y: "2"}
`
	h, err := Hash(obj(t, base))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(HavePrefix("sha256:"))
	g.Expect(h).To(HaveLen(len("sha256:") + 64))

	same := map[string]string{
		"key order": `
kind: ConfigMap
data: {y: "2", x: "1"}
metadata: {labels: {b: "2", a: "1"}, namespace: ns, name: c}
apiVersion: v1
`,
		"server-owned fields and status": `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, labels: {a: "1", b: "2"}, resourceVersion: "9", uid: u, generation: 4,
  creationTimestamp: "2026-01-01T00:00:00Z", managedFields: [{manager: m}], annotations: {}}
data: {x: "1", y: "2"}
status: {anything: true}
`,
	}
	for name, doc := range same {
		h2, err := Hash(obj(t, doc))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h2).To(Equal(h), name)
	}
	different := map[string]string{
		"a value":     strings.Replace(base, `x: "1"`, `x: "3"`, 1),
		"a label":     strings.Replace(base, `b: "2"}`, `b: "3"}`, 1),
		"a namespace": strings.Replace(base, "namespace: ns", "namespace: other", 1),
		"a new key":   strings.Replace(base, `y: "2"}`, `y: "2", z: ""}`, 1),
	}
	for name, doc := range different {
		h2, err := Hash(obj(t, doc))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h2).NotTo(Equal(h), name)
	}

	// int64 and float64 of the same number hash the same.
	a := &unstructured.Unstructured{Object: map[string]any{"kind": "X", "spec": map[string]any{"n": int64(3)}}}
	b := &unstructured.Unstructured{Object: map[string]any{"kind": "X", "spec": map[string]any{"n": float64(3)}}}
	ha, _ := Hash(a)
	hb, _ := Hash(b)
	g.Expect(ha).To(Equal(hb))

	// Hashing does not change the object.
	o := obj(t, same["server-owned fields and status"])
	before := o.DeepCopy()
	_, _ = Hash(o)
	g.Expect(o).To(Equal(before))

	_, err = Hash(nil)
	g.Expect(err).To(HaveOccurred())
	_, err = Hash(&unstructured.Unstructured{Object: map[string]any{"kind": "X", "metadata": map[string]any{"name": "n"}, "f": func() {}}})
	g.Expect(err).To(MatchError(ContainSubstring("hashing X/n")))
}

// BenchmarkHash measures hashing one Deployment-sized object, done once per
// object on every resync.
func BenchmarkHash(b *testing.B) {
	o := file(b, "deployment-dryrun.yaml")
	for b.Loop() {
		if _, err := Hash(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiff measures one live/dry-run comparison with no change.
func BenchmarkDiff(b *testing.B) {
	live, dry := file(b, "deployment-live.yaml"), file(b, "deployment-dryrun.yaml")
	for b.Loop() {
		if r := Diff(live, dry, nil); r.Action != Unchanged {
			b.Fatal(r)
		}
	}
}
