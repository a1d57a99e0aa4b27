package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
)

// patternGenerator is a generator over the ExternalArtifact "mono" with
// one templated artifact.
func patternGenerator(ns, name, pattern string, a sourceextv1beta1.OutputArtifact) *sourceextv1beta1.ArtifactGenerator {
	return &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{{Alias: "mono", Kind: sourcev1.ExternalArtifactKind, Name: "mono"}},
			PathPattern:     pattern,
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{a},
		},
	}
}

// spec.pathPattern makes one ExternalArtifact per matched folder, named
// and labelled with the lowercased captures and filled from the folder as
// it is spelt; spec.commonMetadata's labels and annotations are on each,
// and follow a change of the spec.
func TestArtifactGeneratorPathPatternAndCommonMetadata(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	externalArtifactIn(t, ns, "mono", map[string]string{
		"apps/web/envs/prod/cm.yaml": "web: prod\n",
		"apps/web/envs/dev/cm.yaml":  "web: dev\n",
		"apps/Api/envs/prod/cm.yaml": "api: prod\n",
		"apps/lonely/cm.yaml":        "not: matched\n",
	})
	gen := patternGenerator(ns, "apps", "@mono/apps/{app}/envs/{env}", sourceextv1beta1.OutputArtifact{
		Name: "{app}-{env}",
		Copy: []sourceextv1beta1.CopyOperation{{From: "@mono/apps/{app}/envs/{env}/**", To: "@artifact/{env}/"}},
	})
	gen.Spec.CommonMetadata = &sourceextv1beta1.CommonMetadata{
		Labels:      map[string]string{"team": "a", "env": "overridden"},
		Annotations: map[string]string{"example.com/description": "generated per app"},
	}
	g.Expect(k8s.Create(ctx, gen)).To(Succeed())
	got := waitGenerated(t, keyOf(gen), "api-prod", "web-dev", "web-prod")
	g.Expect(files(t, download(t, got["api-prod"].Status.Artifact))).To(Equal(map[string]string{"prod/cm.yaml": "api: prod\n"}))
	g.Expect(files(t, download(t, got["web-dev"].Status.Artifact))).To(Equal(map[string]string{"dev/cm.yaml": "web: dev\n"}))
	g.Expect(got["api-prod"].Labels).To(Equal(map[string]string{
		"app": "api", "env": "overridden", "team": "a", sourceextv1beta1.GeneratorLabel: string(getGenerator(g, keyOf(gen)).UID),
	}))
	g.Expect(got["web-dev"].Annotations).To(HaveKeyWithValue("example.com/description", "generated per app"))

	// A change of commonMetadata reaches every artifact; a label dropped
	// from it goes, and the capture's own value shows again.
	g.Expect(k8s.Get(ctx, keyOf(gen), gen)).To(Succeed())
	gen.Spec.CommonMetadata.Labels = map[string]string{"team": "b"}
	g.Expect(k8s.Update(ctx, gen)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := waitGenerated(t, keyOf(gen), "api-prod", "web-dev", "web-prod")
		g.Expect(got["web-prod"].Labels).To(HaveKeyWithValue("team", "b"))
		g.Expect(got["web-prod"].Labels).To(HaveKeyWithValue("env", "prod"))
	}, timeout, poll).Should(Succeed())
}

// A pattern matching more folders than the bound, folders colliding on a
// lowercased name, and a placeholder naming no capture each stall the
// generator with a message, and nothing is generated.
func TestArtifactGeneratorPathPatternIsBounded(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	many := map[string]string{"twins/Web/cm.yaml": "a: 1\n", "twins/web/cm.yaml": "a: 2\n"}
	for i := range sourceextv1beta1.MaxGeneratedArtifacts + 1 {
		many[fmt.Sprintf("many/d%03d/cm.yaml", i)] = "a: 1\n"
	}
	externalArtifactIn(t, ns, "mono", many)
	copyAll := func(pattern string) []sourceextv1beta1.CopyOperation {
		return []sourceextv1beta1.CopyOperation{{From: "@mono/" + pattern + "/**", To: "@artifact/"}}
	}
	tests := []struct {
		name, pattern, artifact, reason, message string
	}{
		{"too-many", "@mono/many/{d}", "{d}", meta.LimitExceededReason, "matches more than 100 folders: a generator makes at most 100 artifacts"},
		{"collision", "@mono/twins/{app}", "{app}", kustomizev1.ValidationFailedReason, `folders twins/Web and twins/web both give the artifact name "web"`},
		{"unknown-placeholder", "@mono/twins/{app}", "{application}", kustomizev1.ValidationFailedReason, "{application} is not a capture of the pathPattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, folder, _ := strings.Cut(tt.pattern, "/")
			gen := patternGenerator(ns, tt.name, tt.pattern, sourceextv1beta1.OutputArtifact{Name: tt.artifact, Copy: copyAll(folder)})
			g.Expect(k8s.Create(ctx, gen)).To(Succeed())
			g.Eventually(func(g Gomega) {
				obj := getGenerator(g, keyOf(gen))
				ready := readyOf(obj.Status.Conditions)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Reason).To(Equal(tt.reason))
				g.Expect(ready.Message).To(ContainSubstring(tt.message))
				stalled := apimeta.FindStatusCondition(obj.Status.Conditions, meta.StalledCondition)
				g.Expect(stalled).NotTo(BeNil())
				g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			}, timeout, poll).Should(Succeed())
			uid := getGenerator(g, keyOf(gen)).UID
			var list sourcev1.ExternalArtifactList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{sourceextv1beta1.GeneratorLabel: string(uid)})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		})
	}
}

// Without spec.pathPattern an artifact name must be an object name: a
// placeholder is refused at admission.
func TestArtifactGeneratorNamesArePlainWithoutPathPattern(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gen := patternGenerator(ns, "plain", "", sourceextv1beta1.OutputArtifact{
		Name: "{app}", Copy: []sourceextv1beta1.CopyOperation{{From: "@mono/x", To: "@artifact/"}},
	})
	err := k8s.Create(context.Background(), gen)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("artifact names must be valid object names when pathPattern is not set"))
}
