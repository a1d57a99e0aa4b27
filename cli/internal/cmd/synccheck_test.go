package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/testenv"
)

// startSyncController builds sync-controller from this checkout and runs it
// against env until the test ends, so plumb diff can be checked against
// what the real controller applies rather than against this package's own
// idea of it.
func startSyncController(t *testing.T) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sync-controller")
	build := exec.Command("go", "build", "-o", bin, "./sync-controller")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building sync-controller: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "sync-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--metrics-addr=0", "--health-addr=127.0.0.1:0", "--nats-url=", "--log-level=debug", "--enable-leader-election=false")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				lines := strings.Split(string(data), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				t.Logf("sync-controller log (tail):\n%s", strings.Join(lines, "\n"))
			}
		}
	})
}

// TestDiffAgreesWithSyncController: after the real sync-controller applied
// a rendered artifact, plumb diff finds no drift (its stamping and dry-run
// match the controller's), plumb reconcile sees the controller handle its
// request, plumb tree lists the inventory; after a foreign edit plumb diff
// reports the same path the controller reports in status.drift.
func TestDiffAgreesWithSyncController(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs sync-controller")
	}
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	startSyncController(t)
	srv := testenv.NewArtifactServer(t)
	data := []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    plumb.dev/sync-wave: "1"
data:
  mode: fast
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
    - port: 80
      targetPort: 8080
  selector:
    app: web
`)
	const rev = "main@sha1:abababababababababababababababababababab"
	a := srv.ServeRendered("kustomization", ns, "app", rev, data)
	ks := kustomization(ns, "app", "repo")
	ks.Spec.DriftPolicy = kustomizev1.DriftPolicyReport
	create(ctx, t, ks)
	// render-controller's part of the status, as it writes it.
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.RenderedArtifact = a
		apimeta.SetStatusCondition(&o.Status.Conditions, cond(kustomizev1.RenderedCondition, "True", kustomizev1.RenderSucceededReason, "rendered 2 objects", o.Generation))
	})
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "%v", ks.Status.Conditions)
		g.Expect(ks.Status.LastAppliedRevision).To(Equal(rev))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())

	r := plumb("diff", "ks", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ no drift: 2 objects match Git"))

	// reconcile and tree against the real controller's status.
	r = plumb("reconcile", "ks", "app", "-n", ns, "--timeout", "60s")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(HaveSuffix("✔ Kustomization/" + ns + "/app reconciled, revision " + rev + "\n"))
	r = plumb("tree", "ks", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(ConsistOf(
		"Kustomization/"+ns+"/app  Ready=True Applied revision: "+rev,
		HavePrefix("├── ConfigMap/"+ns+"/settings  Healthy"),
		HavePrefix("└── Service/"+ns+"/web  Healthy"),
	))

	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"mode":"slow"}}`))
	g.Expect(env.Client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
		g.Expect(ks.Status.Drift).NotTo(BeNil())
		g.Expect(ks.Status.Drift.Paths).To(ContainElement("ConfigMap/" + ns + "/settings:data.mode"))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())

	r = plumb("diff", "ks", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(lines(r.out)).To(ContainElements(
		"~ ConfigMap/"+ns+"/settings",
		`    data.mode: "slow" → "fast"`,
		"1 changed, 0 to create, 0 to prune, 1 unchanged",
	))
}
