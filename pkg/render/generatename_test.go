package render

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

// Hooks that carry only metadata.generateName — Argo CD's sync-waves
// example, as a plain folder and through a kustomization with a prefix —
// render: each leaves with its generateName (kustomize's namePrefix and
// nameSuffix applied) and no name, two of one generateName stay two, and
// the file on disk is left as it was.
func TestObjectsWithOnlyAGenerateNameRender(t *testing.T) {
	upgrade := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: upgrade-sql-schema\n  annotations:\n    plumb.dev/hook: PreSync\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: upgrade, image: alpine}]\n"
	twice := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: smoke-\n  annotations:\n    plumb.dev/hook: PostSync\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: smoke-\n  annotations:\n    plumb.dev/hook: SyncFail\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
	for _, tt := range []struct {
		name   string
		files  map[string]string
		spec   kustomizev1.KustomizationSpec
		prefix string
	}{
		{name: "a plain folder", files: map[string]string{"app/upgrade.yaml": upgrade, "app/smoke.yaml": twice, "app/cm.yaml": cm}},
		{name: "a kustomization with a prefix and suffix", prefix: "shop-", files: map[string]string{
			"app/kustomization.yaml": "namePrefix: shop-\nnameSuffix: -v2\nresources: [upgrade.yaml, smoke.yaml, cm.yaml]\n",
			"app/upgrade.yaml":       upgrade, "app/smoke.yaml": twice, "app/cm.yaml": cm,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			work := t.TempDir()
			writeTree(t, SourceDir(work), tt.files)
			spec := tt.spec
			spec.Path = "./app"
			spec.TargetNamespace = "shop"
			res, err := Build(context.Background(), work, &spec, Options{})
			g.Expect(err).NotTo(HaveOccurred())

			objs, err := object.DecodeManifests(res.Manifests)
			g.Expect(err).NotTo(HaveOccurred())
			var generated []string
			for _, o := range objs {
				g.Expect(o.GetName()+o.GetGenerateName()).NotTo(ContainSubstring(generatedMarker), "no stand-in name leaves the build")
				if o.GetKind() == "Job" {
					g.Expect(o.GetName()).To(BeEmpty())
					generated = append(generated, o.GetGenerateName()+" "+o.GetAnnotations()[kustomizev1.HookAnnotation])
				}
			}
			suffix := ""
			if tt.prefix != "" {
				suffix = "-v2"
			}
			g.Expect(generated).To(ConsistOf(
				tt.prefix+"upgrade-sql-schema"+suffix+" PreSync",
				tt.prefix+"smoke-"+suffix+" PostSync",
				tt.prefix+"smoke-"+suffix+" SyncFail",
			))
			g.Expect(res.Objects).To(ContainElement(object.ID{Group: "batch", Kind: "Job", Namespace: "shop", Name: tt.prefix + "smoke-" + suffix}))
			g.Expect(string(res.Manifests)).To(ContainSubstring("name: " + tt.prefix + "web" + suffix))

			// The same source renders to the same bytes.
			again, err := Build(context.Background(), work, &spec, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Digest).To(Equal(res.Digest))
		})
	}
}

// A file without such an object is handed to kustomize byte for byte;
// one with it keeps its other documents and gets the stand-in names.
func TestNameGeneratedTouchesOnlyObjectsWithoutAName(t *testing.T) {
	g := NewWithT(t)
	var n atomic.Int64
	plain := []byte("# generateName is mentioned in a comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n")
	g.Expect(nameGenerated(plain, &n)).To(Equal(plain))
	both := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  generateName: ignored-\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: job-\n")
	out := string(nameGenerated(both, &n))
	g.Expect(out).To(ContainSubstring("name: web\n"))
	g.Expect(out).To(ContainSubstring("name: job-" + generatedMarker + "1"))
	g.Expect(strings.Count(out, generatedMarker)).To(Equal(1))
	g.Expect(nameGenerated([]byte("generateName: [not: yaml"), &n)).To(Equal([]byte("generateName: [not: yaml")))
}
