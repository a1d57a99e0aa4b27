package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	helmv2 "plumb.dev/api/helm/v2"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// TestHelmReleaseLifecycleWithHelmsHistory is a release's bad day under
// make run: the install; an upgrade whose Deployment never becomes
// available, rolled back automatically to the install's objects; a fixed
// upgrade; and the helm CLI, reading Helm's storage, shows all of it as
// `helm history` would after the same with Helm.
func TestHelmReleaseLifecycleWithHelmsHistory(t *testing.T) {
	s, repo := newHelmStory(t, "e2e-helm-life", helmChart("1.0.0", "blue", false), "Hello")
	g, ctx := s.g, s.ctx
	// The release's ServiceAccount writes the objects in the app's
	// namespace and Helm's records (Secrets) in the HelmRelease's.
	deployer(ctx, g, s.ns, "deployer", "admin", s.appNS, s.ns)
	g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "hello"},
		Spec: helmv2.HelmReleaseSpec{
			Interval:           metav1.Duration{Duration: 10 * time.Minute},
			Timeout:            &metav1.Duration{Duration: 20 * time.Second},
			ReleaseName:        "hello",
			TargetNamespace:    s.appNS,
			ServiceAccountName: "deployer",
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "hello",
				Version:   ">=1.0.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			ValuesFrom: []helmv2.ValuesReference{{Kind: "Secret", Name: "hello-values"}},
			// Flux's way to roll a failed upgrade back at once: no retry,
			// the last (only) failure remediated.
			Upgrade: &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{RemediateLastFailure: ptr.To(true)}},
		},
	})).To(Succeed())

	hr := s.waitReleased("1.0.0", helmv2.InstallSucceededReason)
	s.expectSnapshot(hr.Status.History[0], 1, "1.0.0", helmv2.ReleaseStatusDeployed)
	s.waitDeploymentAvailable(1)

	// 1.1.0's Pods never start (the pod simulator's start delay): the
	// upgrade times out on its health check and is rolled back, the
	// install's image running again.
	bad := helmChart("1.1.0", "red", false)
	bad.Files["templates/deployment.yaml"] = strings.Replace(bad.Files["templates/deployment.yaml"],
		"      labels: {app: hello}\n", "      labels: {app: hello}\n      annotations: {"+localenv.StartSecondsAnnotation+": \"3600\"}\n", 1)
	g.Expect(repo.Add(bad)).To(Succeed())
	s.plumb("reconcile", "source", "helm", "charts", "-n", s.ns)
	g.Eventually(func(g Gomega) {
		hr = &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, s.key, hr)).To(Succeed())
		g.Expect(conditions.GetReason(hr, helmv2.RemediatedCondition)).To(Equal(helmv2.RollbackSucceededReason), "%s", helmConditions(hr))
		g.Expect(hr.Status.History).To(HaveLen(3))
	}).WithTimeout(3*time.Minute).WithPolling(poll).Should(Succeed(), "the failed upgrade was not rolled back")
	s.expectSnapshot(hr.Status.History[0], 3, "1.0.0", helmv2.ReleaseStatusDeployed)
	s.expectSnapshot(hr.Status.History[1], 2, "1.1.0", helmv2.ReleaseStatusFailed)
	s.expectSnapshot(hr.Status.History[2], 1, "1.0.0", helmv2.ReleaseStatusSuperseded)
	g.Expect(hr.Status.History[0].Description).To(Equal("Rollback to 1"))
	g.Expect(hr.Status.UpgradeFailures).To(BeEquivalentTo(1))
	s.expectConfigMap("Hello", "blue")
	s.waitDeploymentAvailable(1)
	g.Expect(s.plumb("get", "helmrelease", "hello", "-n", s.ns)).To(And(ContainSubstring("Rollback to 1"), ContainSubstring("1.1.0")))

	// The fix: 1.2.0 starts; a new attempt, upgraded.
	g.Expect(repo.Add(helmChart("1.2.0", "green", false))).To(Succeed())
	s.plumb("reconcile", "source", "helm", "charts", "-n", s.ns)
	hr = s.waitReleased("1.2.0", helmv2.UpgradeSucceededReason)
	s.expectSnapshot(hr.Status.History[0], 4, "1.2.0", helmv2.ReleaseStatusDeployed)
	g.Expect(hr.Status.UpgradeFailures).To(BeZero())
	s.expectConfigMap("Hello", "green")

	// The helm CLI reads the same story from Helm's storage.
	type revision struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Chart       string `json:"chart"`
		Description string `json:"description"`
	}
	var history []revision
	g.Expect(json.Unmarshal([]byte(helmCLI(ctx, t, s.ns, "history", "hello", "-o", "json")), &history)).To(Succeed())
	g.Expect(history).To(HaveLen(4))
	g.Expect(history[0]).To(Equal(revision{1, "superseded", "hello-1.0.0", "Install complete"}))
	g.Expect(history[1]).To(And(HaveField("Revision", 2), HaveField("Status", "failed"), HaveField("Chart", "hello-1.1.0"),
		HaveField("Description", HavePrefix(`Upgrade "hello" failed: `))))
	g.Expect(history[2]).To(Equal(revision{3, "superseded", "hello-1.0.0", "Rollback to 1"}))
	g.Expect(history[3]).To(Equal(revision{4, "deployed", "hello-1.2.0", "Upgrade complete"}))
}
