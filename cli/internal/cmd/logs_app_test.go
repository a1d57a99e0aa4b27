package cmd

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/podlogs"
)

// `plumb logs --kustomization` reads the logs of the Pods of the
// Kustomization's hooks and inventory workloads, a bounded few of each,
// every container. The test control plane has no kubelet to serve a log,
// so the API server's answers (one per container, prefixed with its Pod
// and container) show which logs were asked for; the real node's e2e
// story (e2e/health_test.go) shows the lines themselves.
func TestLogsOfAKustomizationsPods(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	create(ctx, t, ks)

	r := plumb("logs", "--kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.errOut).To(ContainSubstring("Kustomization " + ns + "/app: no Pods of its objects or hooks"))

	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web"}}},
			},
		},
	}
	hook := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate", Labels: map[string]string{
			kustomizev1.NameLabel: "app", kustomizev1.NamespaceLabel: ns, plan.HookSyncLabel: "sync-1",
		}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "migrate", Image: "hook"}},
		}}},
	}
	create(ctx, t, web, hook)
	// The Job's Pod, labelled as the job controller labels it.
	create(ctx, t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate-x1", Labels: hook.Spec.Selector.MatchLabels},
		Spec:       corev1.PodSpec{NodeName: "node-without-kubelet", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "migrate", Image: "hook"}}},
	})
	for i := range 8 {
		create(ctx, t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i), Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:       "node-without-kubelet",
				InitContainers: []corev1.Container{{Name: "init", Image: "web"}},
				Containers:     []corev1.Container{{Name: "app", Image: "web"}},
			},
		})
	}
	// A Pod of nobody's: not read.
	create(ctx, t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec:       corev1.PodSpec{NodeName: "node-without-kubelet", Containers: []corev1.Container{{Name: "app", Image: "other"}}},
	})
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings"},
		}}
	})

	asked := func(errOut string) []string {
		var out []string
		for _, l := range lines(errOut) {
			if strings.HasPrefix(l, "[pod/") {
				out = append(out, l[:strings.Index(l, "]")+1])
			}
			g.Expect(l).NotTo(ContainSubstring("other"))
		}
		return out
	}
	r = plumb("logs", "--kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	got := asked(r.errOut)
	g.Expect(got[0]).To(Equal("[pod/migrate-x1/migrate]"), "the hook's Pod first")
	// At most podlogs.MaxPodsPerObject of the Deployment's eight, init container first.
	g.Expect(got).To(HaveLen(1 + 2*podlogs.MaxPodsPerObject))
	g.Expect(got[1:3]).To(HaveEach(MatchRegexp(`^\[pod/web-\d/(init|app)\]$`)))
	g.Expect(r.errOut).To(ContainSubstring("reading the log of pod " + ns + "/migrate-x1 container migrate: "))

	r = plumb("logs", "--kustomization", "app", "-n", ns, "--hook")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(asked(r.errOut)).To(Equal([]string{"[pod/migrate-x1/migrate]"}))

	r = plumb("logs", "--kustomization", "app", "-n", ns, "--container", "app")
	g.Expect(asked(r.errOut)).To(HaveEach(HavePrefix("[pod/web-")))

	r = plumb("logs", "--hook")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("--hook needs --kustomization or --helmrelease"))
	r = plumb("logs", "--kustomization", "app", "-n", ns, "--kind", "Kustomization")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("--kind, --name, --level and --log-dir filter the controllers' logs"))
	r = plumb("logs", "--kustomization", "nosuch", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("reading Kustomization " + ns + "/nosuch: "))
}
