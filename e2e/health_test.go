package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
)

// TestWhyAReleaseFailsOnARealNode: on a real kubelet, what a failed
// release says is what the Pods say. The PreSync hook's log is printed by
// `plumb logs --kustomization --hook`; a commit whose image crashes at
// start turns the Kustomization Ready=False HealthCheckFailed naming the
// container, its last exit code and reason; a commit whose readiness probe
// never passes does the same with the Pod's condition; and through both
// the first release's Pods keep serving.
func TestWhyAReleaseFailsOnARealNode(t *testing.T) {
	d := startRealNodeDemo(t, "release-fails", 12*time.Minute)
	g := NewWithT(t)
	ctx, own, demo, clone, key := d.ctx, d.own, d.demo, d.clone, d.key
	waitAttempted := func(rev string, check func(g Gomega, k *kustomizev1.Kustomization)) {
		k := &kustomizev1.Kustomization{}
		g.Eventually(func(g Gomega) {
			g.Expect(own.Client.Get(ctx, key, k)).To(Succeed())
			g.Expect(k.Status.LastAttemptedRevision).To(Equal(revision(rev)))
			check(g, k)
		}).WithTimeout(4 * time.Minute).WithPolling(poll).Should(Succeed())
		t.Logf("Ready: %s", conditions.GetMessage(k, meta.ReadyCondition))
	}

	// The PreSync hook really ran; `plumb logs` prints its Pod's log.
	logs := plumbAgainst(ctx, t, own.Kubeconfig, "logs", "--kustomization", "demo", "-n", demo.Namespace, "--hook")
	g.Expect(logs).To(MatchRegexp(`(?m)^\[pod/hello-migrate-\S+/migrate\] step 2/2$`))
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		g.Expect(l).To(HavePrefix("[pod/hello-migrate-"), "only the hooks' Pods")
	}

	svc := &corev1.Service{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}, svc)).To(Succeed())
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	serves := func(g Gomega) string {
		resp, err := localenv.ServiceHTTPClient(2 * time.Second).Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		return string(body)
	}
	g.Eventually(serves).WithTimeout(time.Minute).WithPolling(poll).Should(ContainSubstring("Hello from Plumb"))
	first := &appsv1.Deployment{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}, first)).To(Succeed())
	firstRevision := first.Annotations["deployment.kubernetes.io/revision"]

	// Wait for the last wave too, 30 s, and retry a failure soon.
	g.Expect(own.Client.Patch(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"wait":true,"timeout":"30s","retryInterval":"10s"}}`)))).To(Succeed())
	content, err := clone.Read("deployment.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	marker := "          readinessProbe:\n"
	g.Expect(content).To(ContainSubstring(marker))
	release := func(message, env string) string {
		g.Expect(clone.Write(map[string]string{"deployment.yaml": strings.Replace(content, marker, env+marker, 1)})).To(Succeed())
		sha, err := clone.CommitAndPush(ctx, message)
		g.Expect(err).NotTo(HaveOccurred())
		return sha
	}
	// failsWith waits until the sync of rev fails health, the Deployment's
	// Ready=False message naming a Pod of its newest ReplicaSet and what
	// it says.
	failsWith := func(rev, pod string) {
		deployment := regexp.QuoteMeta("Deployment/" + demo.AppNamespace + "/hello")
		waitAttempted(rev, func(g Gomega, k *kustomizev1.Kustomization) {
			ready := conditions.Get(k, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(kustomizev1.HealthCheckFailedReason))
			g.Expect(ready.Message).To(MatchRegexp(deployment + ` is (Progressing|Degraded): [^;]*; Pod hello-\S+ ` + pod))
		})
	}

	// A crash at start: the container, its last exit code and reason.
	crash := release("Crash at start", "            - name: EXIT_AT_START\n              value: \"3\"\n")
	failsWith(crash, `container web is CrashLoopBackOff \(last exit 3, Error, \d+ restarts?\)`)
	g.Expect(serves(g)).To(ContainSubstring("Hello from Plumb"), "the first release's Pods still serve")

	// A readiness probe that never passes: the Pod's condition.
	never := release("Never ready", "            - name: READY_AFTER\n              value: never\n")
	failsWith(never, `container web is not ready: readiness probe failing \(Pod condition Ready=False ContainersNotReady\)`)
	g.Expect(serves(g)).To(ContainSubstring("Hello from Plumb"), "the first release's Pods still serve")
	sets := &appsv1.ReplicaSetList{}
	g.Expect(own.Client.List(ctx, sets, client.InNamespace(demo.AppNamespace))).To(Succeed())
	kept := false
	for _, rs := range sets.Items {
		if rs.Annotations["deployment.kubernetes.io/revision"] == firstRevision {
			kept = rs.Status.ReadyReplicas == 2
		}
	}
	g.Expect(kept).To(BeTrue(), "the first ReplicaSet keeps its two ready Pods")
}

// plumbAgainst runs the plumb CLI against a control plane of the test's
// own and fails the test when it fails.
func plumbAgainst(ctx context.Context, t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plumbCLI, args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.Output()
	t.Logf("$ plumb %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("plumb %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
