package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// inClusterVersion tags the images of Plumb this story pushes and
// installs: the version a `go build` of the tree says, so the image cache
// (~/.cache/plumb/images) holds one build per source tree.
const inClusterVersion = "dev"

// Plumb as a user runs it: `plumb install` on a cluster whose node really
// runs containers. The images are built here and pushed to the node's
// registry under the names deploy/ gives them (ghcr.io/plumb-dev/…,
// nats:<tag>), so the Deployments and the NATS StatefulSet are deploy/'s,
// unchanged. The controllers run as Pods — non-root, read-only root
// filesystems, the RuntimeDefault seccomp profile — reach the API server
// through the `kubernetes` Service and NATS and source-controller's
// artifacts by their Service names through the cluster's DNS, and
// reconcile the sample app from the launcher's Git server. Then
// sync-controller's Pod is deleted: the ReplicaSet makes a new one, it
// becomes Ready, and it corrects a drift of the sample.
//
// deploy/'s NetworkPolicies are installed and enforced (kube-router): the
// install opens render-controller's egress to the API server's endpoint
// and the node's DNS, which are not where deploy/ expects them, as an
// operator of such a cluster does; a Pod of another namespace is refused
// at source-controller's artifact port while it reaches the webhook
// receiver, which is open to all.
func TestPlumbInstalledByItsCLIRunsAsPodsOnARealNode(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	own, plumb := startInClusterNode(ctx, t, g)

	pushed := time.Now()
	g.Expect(own.PushPlumbImages(ctx, inClusterVersion)).To(Succeed())
	t.Logf("Plumb's and NATS's images built or cached, and pushed, in %s", time.Since(pushed).Round(100*time.Millisecond))
	// NATS's volumeClaimTemplate: no provisioner runs here.
	g.Expect(own.ProvideVolume(ctx, localenv.InstallNamespace, "data-nats-0", "2Gi")).To(Succeed())

	// The launcher's Git server is on the bridge's address, a private
	// one, which source-controller refuses unless told (deploy/README.md,
	// "Addresses"): the install names it, as a user with a Git server on
	// their network does, as narrowly as it can be written.
	gitHost := strings.TrimPrefix(own.Git.Address(), "http://")
	gitIP, _, err := net.SplitHostPort(gitHost)
	g.Expect(err).NotTo(HaveOccurred())
	// The API server's endpoint is the launcher's relay on the bridge, not
	// 443 or 6443, and the Pods' DNS is the node's CoreDNS, not a kube-dns
	// Pod: the egress policies are told both (deploy/README.md, "Network
	// policies"). The install would read the endpoint itself, as the
	// bootstrap story's does; here it is given, read where an operator
	// reads it, so that the flag's override stays tested: the install does
	// not read the EndpointSlice then.
	apiServer := kubernetesEndpoints(ctx, g, own)
	began := time.Now()
	out := plumb("install", "--version", inClusterVersion, "--allowed-private-networks", gitIP+"/32", "--timeout", "10m",
		"--api-server-endpoints", strings.Join(apiServer, ","), "--cluster-dns", localenv.ClusterDNS)
	g.Expect(out).NotTo(ContainSubstring("EndpointSlice"), "--api-server-endpoints given: the slice is not read")
	t.Logf("plumb install: every controller Ready %s after it began", time.Since(began).Round(100*time.Millisecond))

	// NATS too (install waits for the Deployments), then every Pod of
	// plumb-system runs on the node as deploy/ says.
	g.Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: localenv.InstallNamespace, Name: "nats"}, sts)).To(Succeed())
		g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	t.Logf("NATS Ready %s after the install began", time.Since(began).Round(100*time.Millisecond))
	pods := &corev1.PodList{}
	g.Expect(own.Client.List(ctx, pods, client.InNamespace(localenv.InstallNamespace))).To(Succeed())
	running := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		running[p.Labels["app.kubernetes.io/name"]] = true
		g.Expect(p.Spec.NodeName).To(Equal(localenv.NodeName), "Pod %s", p.Name)
		g.Expect(podReady(&p)).To(BeTrue(), "Pod %s", p.Name)
		for _, c := range p.Spec.Containers {
			g.Expect(c.Image).To(Or(HavePrefix("ghcr.io/plumb-dev/"), HavePrefix("nats:")), "deploy/'s image names, unchanged")
			g.Expect(c.SecurityContext).NotTo(BeNil(), "Pod %s", p.Name)
			g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue(), "Pod %s", p.Name)
			g.Expect(*c.SecurityContext.RunAsNonRoot).To(BeTrue(), "Pod %s", p.Name)
		}
		for _, cs := range p.Status.ContainerStatuses {
			g.Expect(cs.RestartCount).To(BeZero(), "Pod %s container %s restarted", p.Name, cs.Name)
		}
	}
	g.Expect(running).To(HaveKey("nats"))
	for _, name := range localenv.ControllerNames {
		g.Expect(running).To(HaveKey(name))
	}

	sourceKey := types.NamespacedName{Namespace: localenv.InstallNamespace, Name: localenv.SourceController}
	source := &appsv1.Deployment{}
	g.Expect(own.Client.Get(ctx, sourceKey, source)).To(Succeed())
	g.Expect(source.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--allowed-private-networks=" + gitIP + "/32"))

	// The sample, reconciled by the controllers in their Pods.
	demo, err := own.DeployDemo(ctx, localenv.DemoOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	clone, err := localenv.CloneRepo(ctx, demo.RepoURL, filepath.Join(t.TempDir(), "demo"))
	g.Expect(err).NotTo(HaveOccurred())
	head, err := clone.Head(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	key := types.NamespacedName{Namespace: demo.Namespace, Name: "demo"}
	sampleReady := func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(own.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(k.Status.LastAppliedRevision).To(Equal(revision(head)))
		g.Expect(conditions.IsReady(k)).To(BeTrue(), "Ready: %s", conditions.GetMessage(k, meta.ReadyCondition))
		hello := &appsv1.Deployment{}
		g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}, hello)).To(Succeed())
		g.Expect(hello.Status.AvailableReplicas).To(Equal(*hello.Spec.Replicas))
	}
	demoBegan := time.Now()
	g.Eventually(sampleReady).WithContext(ctx).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	t.Logf("the sample Ready, its Deployment Available, %s after it was pushed", time.Since(demoBegan).Round(100*time.Millisecond))

	policiesEnforced(ctx, t, g, own)

	// sync-controller's Pod deleted: a new one, Ready, that corrects drift.
	old := controllerPod(ctx, g, own, localenv.SyncController)
	g.Expect(own.Client.Delete(ctx, old)).To(Succeed())
	deleted := time.Now()
	var fresh *corev1.Pod
	g.Eventually(func(g Gomega) {
		fresh = controllerPod(ctx, g, own, localenv.SyncController)
		g.Expect(fresh.UID).NotTo(Equal(old.UID))
		g.Expect(podReady(fresh)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	t.Logf("a new sync-controller Pod %s Ready %s after the old one was deleted", fresh.Name, time.Since(deleted).Round(100*time.Millisecond))

	svcKey := types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}
	svc := &corev1.Service{}
	g.Expect(own.Client.Get(ctx, svcKey, svc)).To(Succeed())
	g.Expect(own.Client.Delete(ctx, svc)).To(Succeed())
	plumb("reconcile", "kustomization", "demo", "-n", demo.Namespace, "--timeout", "2m")
	g.Eventually(func(g Gomega) {
		back := &corev1.Service{}
		g.Expect(own.Client.Get(ctx, svcKey, back)).To(Succeed())
		g.Expect(back.UID).NotTo(Equal(svc.UID))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(sampleReady).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// controllerPod is the one live Pod of a controller's Deployment.
func controllerPod(ctx context.Context, g Gomega, env *localenv.Env, name string) *corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(localenv.InstallNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": name})).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	g.Expect(live).To(HaveLen(1), "the live Pods of %s", name)
	return &live[0]
}

// deploymentRolledOut says whether d's newest template is the one its
// available replicas run.
func deploymentRolledOut(d *appsv1.Deployment) (bool, string) {
	if d.Status.ObservedGeneration < d.Generation {
		return false, "the new generation is not observed yet"
	}
	want := *d.Spec.Replicas
	s := d.Status
	if s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
		return false, fmt.Sprintf("%d updated, %d available, %d in all, of %d", s.UpdatedReplicas, s.AvailableReplicas, s.Replicas, want)
	}
	return true, ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// inClusterReport lists plumb-system's and the sample's Pods with what
// keeps them from Ready, for a failed wait.
func inClusterReport(ctx context.Context, env *localenv.Env) string {
	var b strings.Builder
	for _, ns := range []string{localenv.InstallNamespace, "plumb-demo"} {
		for _, obj := range []client.Object{&sourcev1.GitRepository{}, &kustomizev1.Kustomization{}} {
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo"}, obj); err == nil {
				if getter, ok := obj.(conditions.Getter); ok {
					fmt.Fprintf(&b, "%T %s/demo Ready: %s\n", obj, ns, conditions.GetMessage(getter, meta.ReadyCondition))
				}
			}
		}
		pods := &corev1.PodList{}
		if err := env.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, p := range pods.Items {
			b.WriteString(ns + "/" + p.Name + " " + string(p.Status.Phase))
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					b.WriteString(" " + string(c.Type) + "=False(" + c.Reason + ": " + c.Message + ")")
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil {
					b.WriteString(" " + cs.Name + " waiting " + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message)
				}
				if t := cs.LastTerminationState.Terminated; t != nil {
					b.WriteString(" " + cs.Name + " last exit " + t.Reason + ": " + strings.TrimSpace(t.Message))
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// inClusterNode is the environment the install and bootstrap stories share:
// a control plane, a real node with kube-router enforcing NetworkPolicies,
// and none of Plumb's controllers. Each of those stories used to start its
// own, with Plumb's images pushed to a registry of its own; on one, the
// node and the images cost once (docs/design/node.md, "Time in the
// tests"). The stories stay tests of their own, so a failure names its
// story: the first to come starts it, the next one uninstalls what the
// one before installed, as an operator would, and a story that failed
// stops it, so that the next starts on a new cluster rather than on what
// the failure left. It stops once no story used it for a moment, or at the
// package's end.
var inClusterNode = &localenv.Shared{
	Started: func(took time.Duration) {
		fmt.Fprintf(os.Stderr, "e2e: in-cluster node: the environment started in %s\n", took.Round(100*time.Millisecond))
	},
	Stopped: func(took time.Duration, err error) {
		fmt.Fprintf(os.Stderr, "e2e: in-cluster node: the environment stopped in %s (%v)\n", took.Round(100*time.Millisecond), err)
	},
}

// inClusterNamespaces are the namespaces each in-cluster environment had
// before any story ran on it: what a story leaves beyond them goes before
// the next one.
var inClusterNamespaces = map[*localenv.Env][]string{}

// startInClusterNode gives a story that installs Plumb itself the shared
// in-cluster environment (inClusterNode), starting it if no story did yet
// — skipping the test where a real node cannot start —, with Plumb
// uninstalled if the story before it installed it, and returns it with a
// runner of the plumb CLI against it. At the story's end it logs the Pods
// and the kubelet's log if the story failed.
func startInClusterNode(ctx context.Context, t *testing.T, g *WithT) (*localenv.Env, func(args ...string) string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts its own control plane and a real node, and builds Plumb's images")
	}
	assets, err := localenv.RealNodeAssets()
	if err != nil {
		t.Skipf("no real node on this machine: %v", err)
	}
	// The sample stories' shared node holds the machine's one node: this
	// one would wait for it until the package's end.
	if err := stopSharedRealNode(); err != nil {
		t.Fatalf("stopping the shared real node: %v", err)
	}
	inClusterNode.Options = localenv.Options{
		BinDir: filepath.Dir(plumbCLI), AssetsDir: assets, Node: localenv.NodeReal, NoControllers: true,
		NetworkPolicies: true,
		// Not the story's log: the environment outlives the story.
		Progress: localenv.Stamped(os.Stderr, "e2e: in-cluster node: "),
	}
	acquired := time.Now()
	own, release, err := inClusterNode.Acquire()
	if err != nil {
		t.Fatalf("the in-cluster node: %v", err)
	}
	t.Logf("the in-cluster node's environment acquired in %s", time.Since(acquired).Round(100*time.Millisecond))
	t.Cleanup(func() {
		release()
		if !t.Failed() {
			return
		}
		report, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t.Logf("---- Pods\n%s", inClusterReport(report, own))
		t.Logf("---- kubelet\n%s", localenv.Tail(own.Node.Kubelet.LogPath, 30))
		if err := stopInClusterNode(); err != nil {
			t.Errorf("stopping the in-cluster node: %v", err)
		}
	})
	plumb := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, plumbCLI, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+own.Kubeconfig)
		out, err := cmd.CombinedOutput()
		t.Logf("$ plumb %s\n%s", strings.Join(args, " "), out)
		g.Expect(err).NotTo(HaveOccurred(), "plumb %s", strings.Join(args, " "))
		return string(out)
	}
	uninstallPrevious(ctx, t, g, own, plumb)
	return own, plumb
}

// stopInClusterNode stops the install stories' shared environment, if it
// runs.
func stopInClusterNode() error { return inClusterNode.Stop() }

// uninstallPrevious hands the story a cluster as it was before any story
// ran on it. The namespaces the story before made beside plumb-system (its
// sample, the policy check's stranger) are deleted first: their Pods would
// run on through this story, policiesEnforced makes its namespace again,
// and kube-controller-manager finishes a namespace only after the longest
// grace period of the Pods it held (30 s here), which so passes while the
// uninstall runs. Then, with Plumb installed by the story before, `plumb
// uninstall`, as an operator does before installing again, and what the
// uninstall leaves that the next install would trip on: it deletes the
// namespace and the CRDs without waiting until they are gone (an install
// into a namespace still terminating is refused), and it leaves NATS's
// PersistentVolume, Released and bound to the deleted claim.
func uninstallPrevious(ctx context.Context, t *testing.T, g *WithT, own *localenv.Env, plumb func(args ...string) string) {
	t.Helper()
	base, seen := inClusterNamespaces[own]
	namespaces := &corev1.NamespaceList{}
	g.Expect(own.Client.List(ctx, namespaces)).To(Succeed())
	if !seen {
		for _, ns := range namespaces.Items {
			inClusterNamespaces[own] = append(inClusterNamespaces[own], ns.Name)
		}
		return
	}
	began := time.Now()
	var left []string
	installed := false
	for _, ns := range namespaces.Items {
		if slices.Contains(base, ns.Name) {
			continue
		}
		left = append(left, ns.Name)
		if ns.Name == localenv.InstallNamespace {
			// The uninstall's to delete, after the controllers.
			installed = true
			continue
		}
		if ns.DeletionTimestamp == nil {
			g.Expect(client.IgnoreNotFound(own.Client.Delete(ctx, &ns))).To(Succeed())
		}
	}
	if installed {
		plumb("uninstall", "--timeout", "5m")
		t.Logf("plumb uninstall finished %s after it began", time.Since(began).Round(100*time.Millisecond))
	}
	g.Eventually(func(g Gomega) {
		for _, name := range left {
			err := own.Client.Get(ctx, types.NamespacedName{Name: name}, &corev1.Namespace{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the namespace %s is gone (%v)", name, err)
		}
		crds := &metav1.PartialObjectMetadataList{}
		crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
		g.Expect(own.Client.List(ctx, crds)).To(Succeed())
		for _, crd := range crds.Items {
			g.Expect(crd.Name).NotTo(HaveSuffix(".plumb.dev"), "Plumb's CRDs are gone")
		}
	}).WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string { return inClusterReport(ctx, own) })
	if installed {
		g.Expect(own.RemoveVolume(ctx, localenv.InstallNamespace, "data-nats-0")).To(Succeed())
	}
	t.Logf("the story before left Plumb installed (%t) and the namespaces %v: all gone %s after they began to go",
		installed, left, time.Since(began).Round(100*time.Millisecond))
}

// kubernetesEndpoints are the API server's addresses and ports (IP:port)
// as the `kubernetes` Service's EndpointSlice names them.
func kubernetesEndpoints(ctx context.Context, g *WithT, env *localenv.Env) []string {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace("default"),
		client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"})).To(Succeed())
	var eps []string
	for _, s := range list.Items {
		for _, p := range s.Ports {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					eps = append(eps, net.JoinHostPort(a, fmt.Sprint(*p.Port)))
				}
			}
		}
	}
	g.Expect(eps).NotTo(BeEmpty(), "the kubernetes EndpointSlice names the API server")
	return eps
}

// policiesEnforced proves plumb-system's NetworkPolicies active: a Pod in
// another namespace reaches notification-controller's webhook port, which
// every policy leaves open, and is refused at source-controller's artifact
// port, which only render-controller may reach — both at the Pods' own
// addresses, so that the Pod's network works and only the policy differs.
func policiesEnforced(ctx context.Context, t *testing.T, g *WithT, env *localenv.Env) {
	t.Helper()
	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/echo", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "elsewhere"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	stranger := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "echo", Image: image,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), ReadOnlyRootFilesystem: ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	// The namespace's default ServiceAccount, which admission wants, comes
	// from kube-controller-manager a moment after the namespace.
	g.Eventually(func() error { return env.Client.Create(ctx, stranger) }).
		WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stranger), stranger)).To(Succeed())
		g.Expect(stranger.Status.PodIP).NotTo(BeEmpty())
		g.Expect(podReady(stranger)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string { return inClusterReport(ctx, env) })

	source := controllerPod(ctx, g, env, localenv.SourceController)
	notification := controllerPod(ctx, g, env, localenv.NotificationController)
	receiver := "http://" + net.JoinHostPort(notification.Status.PodIP, "9292") + "/"
	artifacts := "http://" + net.JoinHostPort(source.Status.PodIP, "9090") + "/"
	// The receiver answers (whatever its status for /): the echo Pod
	// passes the status on, 502 only when it got no answer.
	g.Eventually(func(g Gomega) {
		status, body, err := localenv.FetchFrom(ctx, stranger, receiver)
		g.Expect(err).NotTo(HaveOccurred(), "the stranger Pod itself answers")
		g.Expect(status).NotTo(Equal(http.StatusBadGateway), "elsewhere/stranger → %s: %s", receiver, body)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	// The artifact server does listen: from the node (this test), which
	// policies let through, it answers.
	answered, err := httpStatus(ctx, artifacts)
	g.Expect(err).NotTo(HaveOccurred(), "source-controller's artifact server answers the node")
	t.Logf("the node → %s: %d", artifacts, answered)
	status, body, err := localenv.FetchFrom(ctx, stranger, artifacts)
	g.Expect(err).NotTo(HaveOccurred(), "the stranger Pod itself answers")
	g.Expect(status).To(Equal(http.StatusBadGateway), "elsewhere/stranger → %s must be refused: %s", artifacts, body)
	t.Logf("elsewhere/stranger → %s: %d %s", artifacts, status, strings.TrimSpace(body))
}

// httpStatus is the status of a GET of target from this process.
func httpStatus(ctx context.Context, target string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
