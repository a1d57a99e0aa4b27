// Package podtest gives the UI's tests Pods whose logs can be read
// through the real API server: a stand-in kubelet, and an application
// whose tree holds a Deployment, its ReplicaSet and Pod, and a CronJob.
package podtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testenv"
)

// StandInKubelet answers the API server's pods/log requests for one Node
// as a kubelet does (GET /containerLogs/{namespace}/{pod}/{container}
// with tailLines, limitBytes, previous and follow): the test control plane
// has no kubelet, and a real node is one per machine (e2e). Its log is
// "line 1" … "line 500"; the previous instance's is "previous 1" …; a
// follow sends the tail, then "followed", then holds the stream open.
// asked records each request's path and query.
func StandInKubelet(t *testing.T, c client.Client, ns string) (node string, asked chan string) {
	t.Helper()
	asked = make(chan string, 100)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path + "?" + r.URL.RawQuery
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
		if r.Method != http.MethodGet || len(parts) != 3 || parts[0] != ns {
			http.Error(w, "no such container", http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		word := "line"
		if q.Get("previous") == "true" {
			word = "previous"
		}
		var lines []string
		for i := 1; i <= 500; i++ {
			lines = append(lines, fmt.Sprintf("%s %d of %s", word, i, parts[2]))
		}
		if s := q.Get("tailLines"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				http.Error(w, "bad tailLines", http.StatusBadRequest)
				return
			}
			lines = lines[max(0, len(lines)-n):]
		}
		out := strings.Join(lines, "\n") + "\n"
		if s := q.Get("limitBytes"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				http.Error(w, "bad limitBytes", http.StatusBadRequest)
				return
			}
			out = out[:min(n, len(out))]
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, out)
		if q.Get("follow") == "true" {
			fmt.Fprintln(w, "followed")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stand-in-" + ns}}
	create(t, c, n)
	t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	testenv.SetStatus(context.Background(), t, c, n, func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	})
	return n.Name, asked
}

// App makes a Kustomization whose inventory holds a Deployment
// (with a ReplicaSet and a Pod under it, as the controllers would make
// them) and a CronJob; a Deployment and a Pod of nobody's beside them.
func App(t *testing.T, c client.Client, ns, node string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web"}}}}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	other := web.DeepCopy()
	other.Name = "other"
	nightly := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job", Image: "job"}}}}}}}}
	create(t, c, web, other, nightly)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-5d8f",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: web.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	create(t, c, rs)
	pod := func(name string, owners ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node,
				InitContainers: []corev1.Container{{Name: "init", Image: "web"}},
				Containers:     []corev1.Container{{Name: "app", Image: "web"}}}}
	}
	create(t, c, pod("web-5d8f-x1", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}),
		pod("stray"))
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			Interval: metav1.Duration{Duration: time.Hour}, Prune: true}}
	create(t, c, ks)
	testenv.SetStatus(ctx, t, c, ks, func(o *kustomizev1.Kustomization) {
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			{Group: "batch", Version: "v1", Kind: "CronJob", Namespace: ns, Name: "nightly"},
		}}
	})
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}
