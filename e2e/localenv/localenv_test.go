package localenv

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A push with the git binary over HTTP lands in the repository and is
// announced to the webhook with a valid GitHub signature.
func TestGitServerPushSendsSignedWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	type call struct {
		event string
		body  map[string]any
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	const secret = "s3cret"
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if r.Header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var payload map[string]any
		_ = json.Unmarshal(body, &payload)
		mu.Lock()
		calls = append(calls, call{r.Header.Get("X-GitHub-Event"), payload})
		mu.Unlock()
	}))
	defer hook.Close()

	srv, err := newGitServer(t.TempDir(), io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	g.Expect(srv.CreateRepo(ctx, "app")).To(Succeed())
	srv.AddWebhook("app", Webhook{URL: hook.URL, Secret: secret})

	work, err := InitClone(ctx, srv.URL("app"), filepath.Join(t.TempDir(), "app"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Write(map[string]string{"cm.yaml": "kind: ConfigMap\n"})).To(Succeed())
	first, err := work.CommitAndPush(ctx, "first")
	g.Expect(err).NotTo(HaveOccurred())

	clone, err := CloneRepo(ctx, srv.URL("app"), filepath.Join(t.TempDir(), "clone"))
	g.Expect(err).NotTo(HaveOccurred())
	got, err := clone.Read("cm.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("kind: ConfigMap\n"))
	g.Expect(clone.Remove("cm.yaml")).To(Succeed())
	second, err := clone.CommitAndPush(ctx, "second")
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() []Delivery { return srv.Deliveries("app") }).WithTimeout(10 * time.Second).Should(HaveLen(2))
	for _, d := range srv.Deliveries("app") {
		g.Expect(d.Err).NotTo(HaveOccurred())
		g.Expect(d.Status).To(Equal(http.StatusOK))
	}
	mu.Lock()
	defer mu.Unlock()
	g.Expect(calls).To(HaveLen(2))
	byAfter := map[string]call{}
	for _, c := range calls {
		g.Expect(c.event).To(Equal("push"))
		g.Expect(c.body).To(HaveKeyWithValue("ref", "refs/heads/main"))
		byAfter[c.body["after"].(string)] = c
	}
	g.Expect(byAfter).To(HaveKey(first))
	g.Expect(byAfter).To(HaveKey(second))
	g.Expect(byAfter[first].body["before"]).To(Equal(strings.Repeat("0", 40)))
	g.Expect(byAfter[second].body["before"]).To(Equal(first))
}

// The pod simulator writes what a kubelet would: Running and Ready, then,
// for a Job's Pod, Succeeded or Failed by the exit code.
func TestSimulatedPodStatus(t *testing.T) {
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "a", Image: "nginx"}, {Name: "b", Image: "redis"}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	t.Run("running", func(t *testing.T) {
		g := NewWithT(t)
		p := pod()
		(&podSimulator{}).markRunning(p, at)
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(p.Status.QOSClass).To(Equal(corev1.PodQOSBestEffort), "fields the API server set stay")
		g.Expect(p.Status.PodIP).NotTo(BeEmpty())
		g.Expect(p.Status.PodIPs).To(ConsistOf(corev1.PodIP{IP: p.Status.PodIP}))
		g.Expect(p.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(2))
		for _, cs := range p.Status.ContainerStatuses {
			g.Expect(cs.Ready).To(BeTrue())
			g.Expect(cs.State.Running).NotTo(BeNil())
		}
		g.Expect(p.Status.InitContainerStatuses).To(HaveLen(1))
		g.Expect(p.Status.InitContainerStatuses[0].State.Terminated.ExitCode).To(BeZero())
	})

	for _, tc := range []struct {
		name  string
		code  int32
		phase corev1.PodPhase
	}{
		{"exit 0 succeeds", 0, corev1.PodSucceeded},
		{"exit 3 fails", 3, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := pod()
			(&podSimulator{}).markRunning(p, at)
			markFinished(p, at.Add(time.Second), tc.code)
			g.Expect(p.Status.Phase).To(Equal(tc.phase))
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionFalse))))
			for _, cs := range p.Status.ContainerStatuses {
				g.Expect(cs.Ready).To(BeFalse())
				g.Expect(cs.State.Terminated).NotTo(BeNil())
				g.Expect(cs.State.Terminated.ExitCode).To(Equal(tc.code))
				g.Expect(cs.State.Terminated.FinishedAt.Time).To(Equal(at.Add(time.Second)))
			}
		})
	}
}

func TestPodsThatRunToCompletionAreFinished(t *testing.T) {
	g := NewWithT(t)
	pod := func(policy corev1.RestartPolicy, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{RestartPolicy: policy}}
	}
	g.Expect(runsToCompletion(pod(corev1.RestartPolicyNever, nil))).To(BeTrue(), "a chart's test Pod")
	g.Expect(runsToCompletion(pod(corev1.RestartPolicyOnFailure, nil))).To(BeTrue())
	g.Expect(runsToCompletion(pod(corev1.RestartPolicyAlways, nil))).To(BeFalse())
	g.Expect(runsToCompletion(pod("", nil))).To(BeFalse(), "Always, the default")
	g.Expect(runsToCompletion(pod(corev1.RestartPolicyAlways, map[string]string{"batch.kubernetes.io/job-name": "j"}))).To(BeTrue())
}

func TestAnnotationDuration(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", time.Second}, // absent: the default
		{"2", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"0", 0},
		{"-1", time.Second},
		{"soon", time.Second},
	} {
		p := &corev1.Pod{}
		if tc.value != "" {
			p.Annotations = map[string]string{RunSecondsAnnotation: tc.value}
		}
		if got := annotationDuration(p, RunSecondsAnnotation, time.Second); got != tc.want {
			t.Errorf("annotationDuration(%q) = %s, want %s", tc.value, got, tc.want)
		}
	}
}

// The Slack stand-in keeps what it receives and refuses what Slack would.
func TestSlackSink(t *testing.T) {
	g := NewWithT(t)
	var printed strings.Builder
	sink, err := newSlackSink(&printed)
	g.Expect(err).NotTo(HaveOccurred())
	defer sink.Close()

	_, next := sink.Messages()
	resp, err := http.Post(sink.URL(), "application/json", strings.NewReader(
		`{"channel":"#plumb","attachments":[{"author_name":"kustomization/ns/demo","title":"DriftCorrected","text":"reverted","fields":[{"title":"Drift","value":"ConfigMap/ns/cm data.x"}]}]}`))
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(body)).To(Equal("ok"))
	g.Eventually(next).Should(BeClosed())

	msgs, _ := sink.Messages()
	g.Expect(msgs).To(HaveLen(1))
	g.Expect(msgs[0].Attachments[0].Title).To(Equal("DriftCorrected"))
	g.Expect(msgs[0].String()).To(ContainSubstring("Drift: ConfigMap/ns/cm data.x"))
	g.Expect(printed.String()).To(ContainSubstring("kustomization/ns/demo DriftCorrected: reverted"))

	resp, err = http.Post(sink.URL(), "application/json", strings.NewReader("not json"))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
}
