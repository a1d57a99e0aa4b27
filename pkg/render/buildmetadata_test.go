package render

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// annotationsOf returns the annotations of the rendered object id
// (object.ID.String()) in res.
func annotationsOf(g Gomega, res *Result, id string) map[string]string {
	for _, o := range res.Objects {
		if o.String() != id {
			continue
		}
		objs, err := readManifestDocuments(res.Manifests)
		g.Expect(err).NotTo(HaveOccurred())
		for _, n := range objs {
			if n.GetKind() == o.Kind && n.GetName() == o.Name && n.GetNamespace() == o.Namespace {
				return n.GetAnnotations()
			}
		}
	}
	g.Expect(id).To(BeEmpty(), "no object %s rendered", id)
	return nil
}

// A folder of plain files is otherwise built on the fast path, which
// knows nothing of origins: spec.buildMetadata must send it to kustomize,
// and the paths must be spec.path's, not those of Build's work folder.
func TestBuildMetadataOriginOnPlainFiles(t *testing.T) {
	g := NewWithT(t)
	before := fastPathUses.Load()
	spec := kustomizev1.KustomizationSpec{Path: "apps", BuildMetadata: []kustomizev1.BuildMetadataOption{kustomizev1.BuildMetadataOriginAnnotations}}
	res, err := Build(context.Background(), workspace(t, "plain"), &spec, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fastPathUses.Load()).To(Equal(before), "buildMetadata took the fast path")
	g.Expect(annotationsOf(g, res, "Deployment/shop/web")).To(HaveKeyWithValue(originAnnotation, "path: web/deploy.yaml\n"))
	g.Expect(annotationsOf(g, res, "ConfigMap/shop/db")).To(HaveKeyWithValue(originAnnotation, "path: db/cm.json\n"))
	g.Expect(annotationsOf(g, res, "Deployment/shop/web")).NotTo(HaveKey(transformationsAnnotation))

	// Without buildMetadata nothing is annotated.
	res, err = Build(context.Background(), workspace(t, "plain"), &kustomizev1.KustomizationSpec{Path: "apps"}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotationsOf(g, res, "Deployment/shop/web")).NotTo(HaveKey(originAnnotation))
}

// transformerAnnotations names the kustomization files that changed an
// object: a component's (climbing out of spec.path) and spec.path's own
// for the spec's fields, as Flux, which writes them there, names it.
func TestBuildMetadataTransformations(t *testing.T) {
	g := NewWithT(t)
	spec := kustomizev1.KustomizationSpec{
		Path: "app", NamePrefix: "x-", Components: []string{"../components/monitoring"},
		BuildMetadata: []kustomizev1.BuildMetadataOption{kustomizev1.BuildMetadataOriginAnnotations, kustomizev1.BuildMetadataTransformerAnnotations},
	}
	res, err := Build(context.Background(), workspace(t, "components"), &spec, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	sm := annotationsOf(g, res, "ServiceMonitor/x-api")
	g.Expect(sm).To(HaveKeyWithValue(originAnnotation, "path: ../components/monitoring/servicemonitor.yaml\n"))
	g.Expect(sm[transformationsAnnotation]).To(ContainSubstring("configuredIn: kustomization.yaml"))
	g.Expect(sm[transformationsAnnotation]).To(ContainSubstring("kind: PrefixTransformer"))
	g.Expect(sm[transformationsAnnotation]).To(ContainSubstring("configuredIn: ../components/monitoring/kustomization.yaml"))
	g.Expect(string(res.Manifests)).NotTo(ContainSubstring("../source/"))
}

// spec.ignoreMissingComponents drops a component the source does not have
// and keeps the others; without it the build fails naming the component.
// A component leaving the source is refused either way.
func TestIgnoreMissingComponents(t *testing.T) {
	g := NewWithT(t)
	spec := kustomizev1.KustomizationSpec{Path: "app", Components: []string{"../components/monitoring", "../components/absent"}}
	_, err := Build(context.Background(), workspace(t, "components"), &spec, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(Reason(err)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(err.Error()).To(ContainSubstring("components/absent"))

	spec.IgnoreMissingComponents = true
	res, err := Build(context.Background(), workspace(t, "components"), &spec, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	var ids []string
	for _, o := range res.Objects {
		ids = append(ids, o.String())
	}
	g.Expect(ids).To(ConsistOf("Deployment/api", "ServiceMonitor/api"))

	spec.Components = []string{"../../outside"}
	_, err = Build(context.Background(), workspace(t, "components"), &spec, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Contains(err.Error(), `component "../../outside" leaves the source`)).To(BeTrue(), err.Error())
}
