package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	helmv2 "plumb.dev/api/helm/v2"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// TestAHelmCLIReleaseIsAdoptedAsAnUpgrade is a team moving a release from
// the helm CLI to Plumb under make run: `helm install` made revision 1;
// Plumb's HelmRelease for it takes it over in place as the upgrade Helm
// would make — revision 2, the upgrade's hooks (the post-upgrade Job runs,
// the pre-install-or-upgrade one for the new revision), the same
// Deployment — and `helm history` reads both revisions.
func TestAHelmCLIReleaseIsAdoptedAsAnUpgrade(t *testing.T) {
	s, _ := newHelmStory(t, "e2e-helm-adopt", helmChart("1.0.0", "blue", false), "Hello")
	g, ctx := s.g, s.ctx
	helmRun := func(args ...string) string { return helmCLI(ctx, t, s.appNS, args...) }
	tgz, err := testhelm.Package(helmChart("1.0.0", "blue", false))
	g.Expect(err).NotTo(HaveOccurred())
	chartFile := filepath.Join(t.TempDir(), "hello-1.0.0.tgz")
	g.Expect(os.WriteFile(chartFile, tgz, 0o600)).To(Succeed())
	helmRun("install", "hello", chartFile, "--set", "greeting=Hello")
	before := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello"}, before)).To(Succeed())
	s.expectNotFound(&batchv1.Job{}, "hello-notify", "helm install runs no post-upgrade hook")

	// Helm's storage is in the release's namespace, as the helm CLI keeps it.
	deployer(ctx, g, s.ns, "deployer", "admin", s.appNS)
	g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "hello"},
		Spec: helmv2.HelmReleaseSpec{
			Interval:           metav1.Duration{Duration: 10 * time.Minute},
			Timeout:            &metav1.Duration{Duration: time.Minute},
			ReleaseName:        "hello",
			TargetNamespace:    s.appNS,
			StorageNamespace:   s.appNS,
			ServiceAccountName: "deployer",
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "hello",
				Version:   "1.0.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			ValuesFrom: []helmv2.ValuesReference{{Kind: "Secret", Name: "hello-values"}},
		},
	})).To(Succeed())

	hr := s.waitReleased("1.0.0", helmv2.UpgradeSucceededReason)
	g.Expect(hr.Status.History).To(HaveLen(2))
	s.expectSnapshot(hr.Status.History[0], 2, "1.0.0", helmv2.ReleaseStatusDeployed)
	s.expectSnapshot(hr.Status.History[1], 1, "1.0.0", helmv2.ReleaseStatusSuperseded)
	g.Expect(hr.Status.History[1].Digest).To(BeEmpty(), "the adopted release has no render of Plumb's")
	g.Expect(hr.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactReleaseActionKey, helmv2.ReleaseActionUpgrade))
	s.expectHookRan("hello-notify", "1.0.0")
	s.expectHookRan("hello-migrate", "1.0.0")
	after := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: s.appNS, Name: "hello"}, after)).To(Succeed())
	g.Expect(after.UID).To(Equal(before.UID), "taken over in place")
	s.expectConfigMap("Hello", "blue")

	var history []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Description string `json:"description"`
	}
	g.Expect(json.Unmarshal([]byte(helmRun("history", "hello", "-o", "json")), &history)).To(Succeed())
	g.Expect(history).To(HaveLen(2))
	g.Expect(history[0].Status).To(Equal("superseded"))
	g.Expect(history[1].Revision).To(Equal(2))
	g.Expect(history[1].Status).To(Equal("deployed"))
	g.Expect(history[1].Description).To(Equal("Upgrade complete"))
}
