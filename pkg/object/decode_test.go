package object

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDecodeManifests(t *testing.T) {
	g := NewWithT(t)
	objs, err := DecodeManifests([]byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"b\"}}\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	g.Expect(objs[1].GetKind()).To(Equal("Secret"))

	_, err = DecodeManifests([]byte("apiVersion: v1\nkind: ConfigMap\n"))
	g.Expect(err).To(MatchError(ContainSubstring("document 1: apiVersion, kind and metadata.name are required")))
	_, err = DecodeManifests([]byte("a: [\n"))
	g.Expect(err).To(MatchError(ContainSubstring("document 1")))
}

// FuzzDecodeManifests: the rendered artifact comes over the network; its
// decoder must return objects or an error, never panic, and every object it
// returns has the identity fields the rest of sync relies on.
func FuzzDecodeManifests(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`))
	f.Add([]byte("apiVersion: v1\nkind: List\nmetadata: [1, 2]\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := DecodeManifests(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || (o.GetName() == "" && o.GetGenerateName() == "") {
				t.Fatalf("decoded an object without identity: %v", o.Object)
			}
		}
	})
}
