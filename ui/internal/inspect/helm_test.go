package inspect

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/testenv"
)

func helmRelease(ns, name string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "web", Version: "1.x",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}},
		},
	}
}

const (
	chartV1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  image: web:1.0\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: web\nstringData:\n  token: " + secretFromGit + "\n"
	chartV2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  image: web:2.0\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: web\nstringData:\n  token: other-" + secretFromGit + "\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n"
)

func TestHelmReleaseRevisionsDiffTwoReleasesAndNameTheOneGone(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := newServer(t)
	arts := testenv.NewArtifactServer(t)
	hr := helmRelease(ns, "web")
	create(ctx, t, hr)
	dir := "/helmrelease/" + ns + "/web"
	v1 := serveRender(arts, dir, "1.0.0", []byte(chartV1))
	v2 := serveRender(arts, dir, "2.0.0", []byte(chartV2))
	gone := "sha256:" + strings.Repeat("cd", 32)
	now := metav1.Now()
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.RenderedArtifact = v2
		o.Status.LastAppliedRevision = "2.0.0"
		snap := func(version int, chart, digest string, status string) helmv2.Snapshot {
			return helmv2.Snapshot{Version: version, Name: "web", Namespace: ns, ChartName: "web", ChartVersion: chart,
				ConfigDigest: "sha256:" + strings.Repeat("11", 32), Digest: digest, FirstDeployed: now, LastDeployed: now, Status: status}
		}
		o.Status.History = []helmv2.Snapshot{
			snap(3, "2.0.0", v2.Digest, helmv2.ReleaseStatusDeployed),
			snap(2, "1.0.0", v1.Digest, helmv2.ReleaseStatusSuperseded),
			snap(1, "0.9.0", gone, helmv2.ReleaseStatusSuperseded),
		}
	})
	base := "/api/objects/helmrelease/" + ns + "/web"

	r := do(t, srv, http.MethodGet, base, "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.History.Releases).To(HaveLen(3))
	g.Expect(page.Sources).To(HaveLen(1)) // the HelmChart, which does not exist
	g.Expect(page.Sources[0].Kind).To(Equal(sourcev1.HelmChartKind))

	r = do(t, srv, http.MethodGet, base+"/revisions?from=2&to=3", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var revs revisionsPage
	r.decode(t, &revs)
	g.Expect(revs.Revisions).To(HaveLen(3))
	g.Expect(revs.Revisions[0].ID).To(Equal("3"))
	g.Expect(revs.DiffUnavailable).To(BeNil(), r.body)
	g.Expect(revs.Diff).To(ConsistOf(
		revisionChange{Object: "/ConfigMap//web", Action: diff.Configured, Path: "data.image", Before: `"web:1.0"`, After: `"web:2.0"`},
		revisionChange{Object: "/Secret//web", Action: diff.Configured, Path: "stringData.token", Before: diff.Redacted, After: diff.Redacted},
		revisionChange{Object: "/Service//web", Action: diff.Created},
	), r.body)
	g.Expect(r.body).NotTo(ContainSubstring(secretFromGit))

	r = do(t, srv, http.MethodGet, base+"/revisions?from=1&to=3", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var gone1 revisionsPage
	r.decode(t, &gone1)
	g.Expect(gone1.Diff).To(BeEmpty())
	g.Expect(gone1.DiffUnavailable.Gone).To(Equal([]string{"1"}))

	// The front end names revisions by their revision: the newest release
	// of a chart version.
	r = do(t, srv, http.MethodGet, base+"/revisions?from=web@1.0.0&to=web@2.0.0", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var byRevision revisionsPage
	r.decode(t, &byRevision)
	g.Expect(byRevision.Diff).To(HaveLen(3), r.body)
	g.Expect(gone1.Retained).To(ContainSubstring("garbage-collects"))
}

func TestHelmReleaseIgnoreRuleIsWhatTheAPIAccepts(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := newServer(t)
	hr := helmRelease(ns, "web")
	hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn,
		Ignore: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}}}}
	create(ctx, t, hr)
	base := "/api/objects/helmrelease/" + ns + "/web"

	r := do(t, srv, http.MethodPost, base+"/ignore", "", `{"id":"apps/Deployment/`+ns+`/web","path":"spec.template.spec.containers[0].image","apply":true}`)
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var answer ignoreAnswer
	r.decode(t, &answer)
	g.Expect(answer.Applied).To(BeTrue())
	want := []kustomizev1.IgnoreRule{
		{Paths: []string{"/spec/replicas"}},
		{Paths: []string{"/spec/template/spec/containers/0/image"}, Target: &kustomizev1.Selector{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}},
	}
	got := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
	g.Expect(got.Spec.DriftDetection.Ignore).To(Equal(want))
	// The patch replaced the list, nothing else of driftDetection.
	g.Expect(got.Spec.DriftDetection.Mode).To(Equal(helmv2.DriftDetectionWarn))

	doc := map[string]any{}
	g.Expect(yaml.Unmarshal([]byte(answer.YAML), &doc)).To(Succeed())
	spec := doc["spec"].(map[string]any)
	spec["interval"] = "1m"
	spec["chart"] = map[string]any{"spec": map[string]any{"chart": "web", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}
	doc["metadata"].(map[string]any)["name"] = "with-rule"
	g.Expect(env.Client.Create(ctx, &unstructured.Unstructured{Object: doc}, client.FieldValidation("Strict"))).To(Succeed())
	created := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "with-rule"}, created)).To(Succeed())
	g.Expect(created.Spec.DriftDetection.Ignore).To(Equal(want))

	t.Run("a source has no ignore rules", func(t *testing.T) {
		g := NewWithT(t)
		create(ctx, t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
			Spec: sourcev1.GitRepositorySpec{URL: "https://git.example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}}})
		r := do(t, srv, http.MethodPost, "/api/objects/gitrepository/"+ns+"/repo/ignore", "", `{"id":"apps/Deployment/`+ns+`/web","path":"spec.replicas"}`)
		g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
		r = do(t, srv, http.MethodGet, "/api/objects/gitrepository/"+ns+"/repo", "", "")
		g.Expect(r.status).To(Equal(http.StatusOK), r.String())
		r = do(t, srv, http.MethodGet, "/api/objects/gitrepository/"+ns+"/nothere", "", "")
		g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
		r = do(t, srv, http.MethodGet, "/api/objects/deployment/"+ns+"/web", "", "")
		g.Expect(r.status).To(Equal(http.StatusNotFound), r.String())
	})
}
