package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// controllerLogger is the logger a controller builds from its
// --log-encoding and --log-level (pkg/app.SetupLogger: Flux's
// logger.NewLogger), writing to path instead of stderr.
func controllerLogger(t *testing.T, path, encoding string) logr.Logger {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// logger.NewLogger writes to os.Stderr as it is when it is called.
	stderr := os.Stderr
	os.Stderr = f
	l := logger.NewLogger(logger.Options{LogEncoding: encoding, LogLevel: "debug"})
	os.Stderr = stderr
	return l
}

// reconcileLogger is the logger controller-runtime hands a reconcile of
// kind ns/name (its builder's LogConstructor, then the reconcileID).
func reconcileLogger(l logr.Logger, controller, group, kind, ns, name string) logr.Logger {
	return l.WithValues("controller", controller, "controllerGroup", group, "controllerKind", kind).
		WithValues(kind, klog.KRef(ns, name), "namespace", ns, "name", name).
		WithValues("reconcileID", types.UID("5c0d6c3e-1f7a-4d2b-9a43-0b5e6f1d2c3a"))
}

// writeControllerLogs writes, with the controllers' own loggers, what
// source- and sync-controller log about a few objects, as `make run`
// leaves them in <state-dir>/logs.
func writeControllerLogs(t *testing.T, dir, encoding string) {
	t.Helper()
	src := controllerLogger(t, filepath.Join(dir, "source-controller.log"), encoding)
	sync := controllerLogger(t, filepath.Join(dir, "sync-controller.log"), encoding)
	step := func() { time.Sleep(3 * time.Millisecond) } // distinct timestamps, so the merged order is known

	sync.WithName("sync-controller").Info("starting manager")
	step()
	reconcileLogger(src, "gitrepository", "source.plumb.dev", "GitRepository", "team-a", "repo").Info("fetched revision main@sha1:1f3a")
	step()
	apps := reconcileLogger(sync, "kustomization", "kustomize.plumb.dev", "Kustomization", "team-a", "apps")
	apps.V(1).Info("planned 3 objects in 2 waves")
	step()
	apps.Info("applied revision main@sha1:1f3a")
	step()
	apps.Error(errors.New("health check failed after 30s:\nDeployment/web/web: 0 of 2 updated replicas are available"), "Reconciler error")
	step()
	reconcileLogger(sync, "kustomization", "kustomize.plumb.dev", "Kustomization", "team-b", "apps").Info("applied revision main@sha1:77c0")
	step()
}

// withoutTime drops the timestamp column of plumb logs' lines.
func withoutTime(t *testing.T, out string) []string {
	t.Helper()
	var ls []string
	for _, l := range lines(out) {
		ts, rest, ok := strings.Cut(l, "  ")
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", ts); !ok || err != nil {
			ls = append(ls, l) // not an entry: kept whole
			continue
		}
		ls = append(ls, rest)
	}
	return ls
}

func TestLogsFromMakeRunsLogFiles(t *testing.T) {
	for _, encoding := range []string{"console", "json"} {
		t.Run(encoding, func(t *testing.T) {
			dir := t.TempDir()
			writeControllerLogs(t, dir, encoding)
			const (
				start   = "info   sync-controller  starting manager"
				fetched = "info   source-controller  GitRepository/team-a/repo  fetched revision main@sha1:1f3a"
				planned = "debug  sync-controller  Kustomization/team-a/apps  planned 3 objects in 2 waves"
				applied = "info   sync-controller  Kustomization/team-a/apps  applied revision main@sha1:1f3a"
				failed  = "error  sync-controller  Kustomization/team-a/apps  Reconciler error  error: health check failed after 30s: Deployment/web/web: 0 of 2 updated replicas are available"
				teamB   = "info   sync-controller  Kustomization/team-b/apps  applied revision main@sha1:77c0"
			)
			for _, tc := range []struct {
				name string
				args []string
				want []string
			}{
				{"one object", []string{"--kind", "Kustomization", "--name", "apps", "-n", "team-a"}, []string{planned, applied, failed}},
				{"kind in any case", []string{"--kind", "kustomization", "-A"}, []string{planned, applied, failed, teamB}},
				{"a name in every namespace", []string{"--name", "apps"}, []string{planned, applied, failed, teamB}},
				{"a namespace", []string{"-n", "team-a"}, []string{fetched, planned, applied, failed}},
				{"a level and above", []string{"--level", "info", "-n", "team-a"}, []string{fetched, applied, failed}},
				{"errors only", []string{"--level", "error"}, []string{failed}},
				{"the last lines", []string{"--tail", "2", "--kind", "Kustomization"}, []string{failed, teamB}},
				{"nothing matches", []string{"--kind", "Receiver"}, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					g := NewWithT(t)
					r := plumb(append([]string{"logs", "--log-dir", dir}, tc.args...)...)
					g.Expect(r.code).To(Equal(ExitOK), r.String())
					g.Expect(withoutTime(t, r.out)).To(Equal(tc.want))
				})
			}

			t.Run("everything, merged in time order", func(t *testing.T) {
				g := NewWithT(t)
				r := plumb("logs", "--log-dir", dir)
				g.Expect(r.code).To(Equal(ExitOK), r.String())
				got := withoutTime(t, r.out)
				g.Expect(got[:5]).To(Equal([]string{start, fetched, planned, applied, failed}))
				g.Expect(got).To(ContainElement(teamB))
				// The error's stack trace (zap adds one at error level when
				// --log-level=debug) is kept when nothing narrows the output.
				if encoding == "console" {
					g.Expect(len(got)).To(BeNumerically(">", 6))
				}
			})
		})
	}
}

func TestLogsSinceAndFollow(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "render-controller.log")
	log := controllerLogger(t, path, "console")
	ks := reconcileLogger(log, "kustomization", "kustomize.plumb.dev", "Kustomization", "team-a", "apps")
	ks.Info("rendered revision main@sha1:0001")
	// Make that line two hours old, as if the process had been running.
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	ts, _, _ := strings.Cut(string(data), "\t")
	old := time.Now().Add(-2 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	g.Expect(os.WriteFile(path, []byte(strings.Replace(string(data), ts, old, 1)), 0o644)).To(Succeed())
	ks.Info("rendered revision main@sha1:0002")

	r := plumb("logs", "--log-dir", dir, "--since", "1h")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(withoutTime(t, r.out)).To(Equal([]string{"info   render-controller  Kustomization/team-a/apps  rendered revision main@sha1:0002"}))

	// --follow prints the matching lines written after it started.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--kubeconfig", kubeconfig, "logs", "--log-dir", dir, "-f", "--tail", "1", "--name", "apps"}, &out, &errOut)
	}()
	g.Eventually(out.String, 10*time.Second, 50*time.Millisecond).Should(ContainSubstring("main@sha1:0002"))
	reconcileLogger(log, "kustomization", "kustomize.plumb.dev", "Kustomization", "team-a", "other").Info("not this one")
	ks.Info("rendered revision main@sha1:0003")
	g.Eventually(out.String, 10*time.Second, 50*time.Millisecond).Should(ContainSubstring("main@sha1:0003"))
	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(Equal(ExitOK)))
	g.Expect(withoutTime(t, out.String())).To(Equal([]string{
		"info   render-controller  Kustomization/team-a/apps  rendered revision main@sha1:0002",
		"info   render-controller  Kustomization/team-a/apps  rendered revision main@sha1:0003",
	}), errOut.String())
}

func TestLogsFromPods(t *testing.T) {
	ctx, system := newNamespace(t)
	g := NewWithT(t)

	r := plumb("logs", "--controller-namespace", system)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("no controller pods in " + system + " (labelled app.kubernetes.io/name=source-controller, …); under `make run` read its log files with --log-dir <state-dir>/logs"))

	// A controller's pod: its log is the kubelet's to serve, and the test
	// control plane has no kubelet (nor the pod's node), so the API
	// server's answer shows that plumb asked the pods/log subresource.
	create(ctx, t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "sync-controller-7d9f", Labels: map[string]string{"app.kubernetes.io/name": "sync-controller"}},
		Spec:       corev1.PodSpec{NodeName: "node-without-kubelet", Containers: []corev1.Container{{Name: "manager", Image: "sync-controller"}}},
	})
	r = plumb("logs", "--controller-namespace", system)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("sync-controller: reading the log of pod " + system + "/sync-controller-7d9f: "))

	r = plumb("logs", "--log-dir", t.TempDir())
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("holds no controller log (source-controller.log, …)"))

	r = plumb("logs", "--log-dir", t.TempDir(), "--level", "loud")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`--level "loud": want trace, debug, info or error`))
}
