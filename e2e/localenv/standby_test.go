package localenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// sync-controller run as a leader and a standby: the leader killed with
// SIGKILL holds its Lease until it expires, then another process takes it
// and carries on: a new commit is applied and a foreign edit made while
// no one led is reverted.
func TestAStandbyTakesOverFromAKilledLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the control plane and the five controllers")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{BinDir: buildControllers(t), Standbys: []string{SyncController}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	leader, err := env.WaitLeader(ctx, SyncController)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Instances(SyncController)).To(HaveLen(2))
	lease, err := env.Lease(ctx, SyncController)
	g.Expect(err).NotTo(HaveOccurred())
	holder := *lease.Spec.HolderIdentity

	const ns = "standby"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(env.Git.CreateRepo(ctx, "app")).To(Succeed())
	clone, err := InitClone(ctx, env.Git.URL("app"), filepath.Join(t.TempDir(), "app"))
	g.Expect(err).NotTo(HaveOccurred())
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  key: from-git\n"
	}
	g.Expect(clone.Write(map[string]string{"first.yaml": configMap("first")})).To(Succeed())
	_, err = clone.CommitAndPush(ctx, "first")
	g.Expect(err).NotTo(HaveOccurred())

	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: env.Git.URL("app"), Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
			Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			Path:      "./", Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
		},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	readyWith := func(entries int) func(Gomega) {
		return func(g Gomega) {
			k := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), k)).To(Succeed())
			g.Expect(k.Status.ObservedGeneration).To(Equal(k.Generation))
			g.Expect(conditions.IsReady(k)).To(BeTrue(), "Ready: %v", conditions.Get(k, meta.ReadyCondition))
			g.Expect(k.Status.Inventory).NotTo(BeNil())
			g.Expect(k.Status.Inventory.Entries).To(HaveLen(entries))
		}
	}
	g.Eventually(readyWith(1)).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

	g.Expect(leader.Kill()).To(Succeed())
	// While no process leads: a foreign edit, and a new commit fetched.
	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}}
	g.Expect(env.Client.Patch(ctx, first, client.RawPatch(types.MergePatchType, []byte(`{"data":{"key":"foreign"}}`)),
		client.FieldOwner("intruder"))).To(Succeed())
	g.Expect(clone.Write(map[string]string{"second.yaml": configMap("second")})).To(Succeed())
	_, err = clone.CommitAndPush(ctx, "second")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Patch(ctx, repo, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+meta.ReconcileRequestAnnotation+`":"after-the-kill"}}}`)))).To(Succeed())

	g.Eventually(func(g Gomega) {
		l, err := env.Lease(ctx, SyncController)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(l.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*l.Spec.HolderIdentity).NotTo(Equal(holder), "the killed leader's identity")
		c, err := env.Leader(ctx, SyncController)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c).NotTo(BeNil(), "no process says it leads")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

	g.Eventually(readyWith(2)).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(first), first)).To(Succeed())
		g.Expect(first.Data).To(HaveKeyWithValue("key", "from-git"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "the foreign edit was not reverted")
}

// buildControllers builds the five controllers from the tree under test
// into a temporary folder, or returns $PLUMB_E2E_BIN_DIR (prebuilt ones,
// as the e2e tests take them).
func buildControllers(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("PLUMB_E2E_BIN_DIR"); dir != "" {
		return dir
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, name := range ControllerNames {
		args = append(args, "./"+name)
	}
	build := exec.Command("go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controllers: %v\n%s", err, out)
	}
	return dir
}
