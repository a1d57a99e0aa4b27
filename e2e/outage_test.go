package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// How long an outage lasts in these stories: long enough for every
// controller to fail requests, retry and back off (its informers' watches
// break, its status writes fail), shorter than the minute.
const outage = 20 * time.Second

// The sample's PreSync hook (deploy/examples/app/migrate-job.yaml).
const demoHook = "hello-migrate"

// outageStory deploys a copy of the sample for an outage story, with a
// context long enough for the outage and the recovery after it, and the
// GitRepository polling every ten seconds: a push during an API server
// outage cannot be announced by its webhook (the Receiver cannot write),
// so the interval is what picks the commit up, as it would in a cluster.
func outageStory(t *testing.T, name string) *story {
	t.Helper()
	s := deploy(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	s.ctx = ctx
	repo := &sourcev1.GitRepository{}
	s.g.Expect(env.Client.Get(s.ctx, s.key, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Interval = metav1.Duration{Duration: 10 * time.Second}
	s.g.Expect(env.Client.Patch(s.ctx, repo, patch)).To(Succeed())
	s.g.Eventually(s.hookRuns).WithTimeout(timeout).WithPolling(poll).Should(Equal(1), "the first revision's hook")
	return s
}

// hookRuns counts the runs of the sample's PreSync hook in the story's
// app namespace: the distinct Jobs named hello-migrate that
// kube-controller-manager's job controller created a Pod for, by the
// Events it recorded, which outlive the Jobs a later sync deletes.
func (s *story) hookRuns() (int, error) {
	events := &corev1.EventList{}
	if err := env.Client.List(s.ctx, events, client.InNamespace(s.demo.AppNamespace)); err != nil {
		return 0, err
	}
	jobs := map[types.UID]bool{}
	for _, e := range events.Items {
		o := e.InvolvedObject
		if o.Kind == "Job" && o.Name == demoHook && e.Reason == "SuccessfulCreate" {
			jobs[o.UID] = true
		}
	}
	return len(jobs), nil
}

// process is what tells a controller process that kept running from one
// that was started again.
type process struct {
	pid, restarts int
}

// controllerProcesses records the five controllers' processes.
func controllerProcesses() map[string]process {
	out := map[string]process{}
	for _, name := range localenv.ControllerNames {
		c := env.Controllers[name]
		_, restarts, _ := c.Status()
		out[name] = process{pid: c.Pid(), restarts: restarts}
	}
	return out
}

// expectStillRunning checks that every controller is the process it was:
// running, same pid, not restarted.
func (s *story) expectStillRunning(before map[string]process, when string) {
	s.t.Helper()
	for name, p := range before {
		c := env.Controllers[name]
		running, restarts, last := c.Status()
		s.g.Expect(running).To(BeTrue(), "%s is not running %s (last exit: %s)", name, when, last)
		s.g.Expect(restarts).To(Equal(p.restarts), "%s was restarted %s (last exit: %s)", name, when, last)
		s.g.Expect(c.Pid()).To(Equal(p.pid), "%s is another process %s", name, when)
	}
}

// expectForeignEditCorrected edits the sample's ConfigMap by hand and
// waits until sync-controller puts greeting back.
func (s *story) expectForeignEditCorrected(greeting string) {
	s.t.Helper()
	key := types.NamespacedName{Namespace: s.demo.AppNamespace, Name: "hello-config"}
	cm := &corev1.ConfigMap{}
	s.g.Expect(env.Client.Get(s.ctx, key, cm)).To(Succeed())
	s.g.Expect(cm.Data).To(HaveKeyWithValue("greeting", greeting))
	cm.Data["greeting"] = "edited by hand"
	s.g.Expect(env.Client.Update(s.ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	s.g.Eventually(func(g Gomega) {
		live := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(s.ctx, key, live)).To(Succeed())
		g.Expect(live.Data).To(HaveKeyWithValue("greeting", greeting))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the foreign edit was not reverted")
}

// kube-apiserver stopped for a while, with a commit pushed meanwhile, and
// started again on the same port and etcd: every controller keeps running
// through it (same process, no restart), the commit is applied once the
// API server answers, its PreSync hook runs once (the revision before it
// is not run again), and a foreign edit after it is corrected.
func TestAnAPIServerOutageLosesNothingAndRunsNoHookTwice(t *testing.T) {
	s := outageStory(t, "e2e-apiserver-outage")
	before := controllerProcesses()

	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello after an outage")
	down := true
	t.Cleanup(func() {
		if down {
			_ = env.StartAPIServer()
		}
	})
	s.g.Expect(env.StopAPIServer()).To(Succeed())
	sha := s.push("A commit during the API server's outage")
	time.Sleep(outage)
	s.expectStillRunning(before, "during the outage")
	s.g.Expect(env.StartAPIServer()).To(Succeed())
	down = false

	k := s.waitApplied(sha)
	t.Logf("applied %s after the outage; Ready: %s", sha, readyMessage(k))
	s.g.Eventually(s.hookRuns).WithTimeout(timeout).WithPolling(poll).Should(Equal(2), "one hook run per revision")
	s.expectForeignEditCorrected("Hello after an outage")
	s.g.Expect(s.hookRuns()).To(Equal(2), "a drift correction runs no hook")
	s.expectStillRunning(before, "after the outage")
}

// etcd restarted while a sync waits on its PreSync hook: the API server
// fails requests meanwhile, every controller keeps running, the sync
// finishes with the hook it had started (the same Job, not a second run),
// and a foreign edit after it is corrected.
func TestAnEtcdRestartDuringASyncRunsTheHookOnce(t *testing.T) {
	s := outageStory(t, "e2e-etcd-restart")
	before := controllerProcesses()

	// The hook runs for six seconds, long enough to restart etcd in.
	s.edit("migrate-job.yaml", `local.plumb.dev/run-seconds: "2"`, `local.plumb.dev/run-seconds: "6"`)
	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello after etcd")
	sha := s.push("A longer migration")

	job := s.inPreSyncWithHook(sha, demoHook, "6")
	hookUID := job.UID

	s.g.Expect(env.RestartEtcd()).To(Succeed())
	s.expectStillRunning(before, "right after etcd restarted")

	s.waitApplied(sha)
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	s.g.Expect(job.UID).To(Equal(hookUID), "the hook was run again after etcd's restart")
	s.g.Expect(job.Status.Succeeded).To(BeEquivalentTo(1))
	s.g.Eventually(s.hookRuns).WithTimeout(timeout).WithPolling(poll).Should(Equal(2), "one hook run per revision")
	s.expectForeignEditCorrected("Hello after etcd")
	s.expectStillRunning(before, "after etcd's restart")
}

// NATS stopped while a foreign edit and a commit happen: sync-controller
// corrects the drift and the commit is applied without NATS; the events
// about both wait in the controllers' queues (docs/design/scale.md,
// "Outages") and reach the Slack stand-in once NATS is back on the same
// port and store, with none dropped.
func TestANATSOutageDelaysAlertsAndLosesNone(t *testing.T) {
	s := outageStory(t, "e2e-nats-outage")
	before := controllerProcesses()
	sync := env.Controllers[localenv.SyncController]
	source := env.Controllers[localenv.SourceController]
	droppedBefore := map[*localenv.Controller]float64{}
	for _, c := range []*localenv.Controller{sync, source} {
		droppedBefore[c] = s.metric(c, "plumb_events_dropped_total")
	}

	down := true
	t.Cleanup(func() {
		if down {
			_ = env.StartNATS()
		}
	})
	env.StopNATS()
	s.expectForeignEditCorrected("Hello from Plumb")
	s.edit("configmap.yaml", "greeting: Hello from Plumb", "greeting: Hello without NATS")
	sha := s.push("A commit during the NATS outage")
	s.waitApplied(sha)
	time.Sleep(outage)
	s.expectStillRunning(before, "during the NATS outage")
	s.g.Expect(s.metric(sync, "plumb_events_queue_length")).To(BeNumerically(">", 0), "sync-controller's events wait in its queue")
	// Neither the drift's correction nor the commit's sync reached Slack;
	// the first sync's Applied, sent before the outage, names the same
	// ConfigMap among its changes, so the check is on what is news of the
	// outage: the corrected field and the commit.
	msgs, _ := env.Slack.Messages()
	for _, m := range msgs {
		s.g.Expect(m.Raw).NotTo(ContainSubstring("ConfigMap/e2e-nats-outage-app/hello-config data.greeting"), "delivered while NATS was down")
		s.g.Expect(m.Raw).NotTo(ContainSubstring(sha), "delivered while NATS was down")
	}

	s.g.Expect(env.StartNATS()).To(Succeed())
	down = false
	s.waitSlack(kustomizev1.DriftCorrectedReason, "ConfigMap/e2e-nats-outage-app/hello-config data.greeting")
	s.waitSlackFrom("gitrepository/"+s.key.Namespace+"/"+s.key.Name, sourcev1.NewArtifactReason, sha)
	s.g.Eventually(func() float64 { return s.metric(sync, "plumb_events_queue_length") }).
		WithTimeout(timeout).WithPolling(poll).Should(BeZero())
	for c, n := range droppedBefore {
		s.g.Expect(s.metric(c, "plumb_events_dropped_total")).To(Equal(n), "%s dropped events", c.Name)
	}
	s.expectStillRunning(before, "after the NATS outage")
}

// metric reads the sum of a metric's samples from a controller's /metrics;
// a metric with no sample yet reads 0.
func (s *story) metric(c *localenv.Controller, name string) float64 {
	s.t.Helper()
	resp, err := http.Get("http://" + c.MetricsAddr + "/metrics")
	s.g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	s.g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		s.g.Expect(err).NotTo(HaveOccurred(), "%s", line)
		sum += v
	}
	s.g.Expect(sc.Err()).NotTo(HaveOccurred())
	return sum
}
