package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/server"
)

// standInKubelet answers the API server's pods/log requests for one Node
// as a kubelet does (GET /containerLogs/{namespace}/{pod}/{container}
// with tailLines, limitBytes, previous and follow): the test control plane
// has no kubelet, and a real node is one per machine (e2e). Its log is
// "line 1" … "line 500"; the previous instance's is "previous 1" …; a
// follow sends the tail, then "followed", then holds the stream open.
// asked records each request's path and query.
func standInKubelet(t *testing.T, ns string) (node string, asked chan string) {
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
	create(t, n)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	testenv.SetStatus(context.Background(), t, env.Client, n, func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	})
	return n.Name, asked
}

// workloadApp makes a Kustomization whose inventory holds a Deployment
// (with a ReplicaSet and a Pod under it, as the controllers would make
// them) and a CronJob; a Deployment and a Pod of nobody's beside them.
func workloadApp(t *testing.T, ns, node string) {
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
	create(t, web, other, nightly)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-5d8f",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: web.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	create(t, rs)
	pod := func(name string, owners ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node,
				InitContainers: []corev1.Container{{Name: "init", Image: "web"}},
				Containers:     []corev1.Container{{Name: "app", Image: "web"}}}}
	}
	create(t, pod("web-5d8f-x1", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}),
		pod("stray"))
	ks := kustomization(ns, "app", "app")
	create(t, ks)
	testenv.SetStatus(ctx, t, env.Client, ks, func(o *kustomizev1.Kustomization) {
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			{Group: "batch", Version: "v1", Kind: "CronJob", Namespace: ns, Name: "nightly"},
		}}
	})
}

func TestAnOperatorReadsLogsAndActsOnTheTreeAViewerIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "ops")
	node, asked := standInKubelet(t, ns)
	workloadApp(t, ns, node)
	read := []rbacv1.PolicyRule{
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get"}},
	}
	opsToken, _ := serviceAccountToken(t, ns, "ops")
	grantRules(t, ns, ns, "ops", "ops", append(read,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get", "patch"}}))
	viewToken, _ := serviceAccountToken(t, ns, "viewer")
	grantRules(t, ns, ns, "viewer", "viewer", read)
	srv := start(t, server.AuthToken, true)
	server.SetMaxFollow(t, 3*time.Second)
	ops, viewer := newBrowser(t, srv), newBrowser(t, srv)
	ops.signIn(map[string]string{"token": opsToken})
	viewer.signIn(map[string]string{"token": viewToken})
	app := "/api/objects/kustomization/" + ns + "/app"
	podID := url.QueryEscape("/Pod/" + ns + "/web-5d8f-x1")

	// The Pod's page: its containers, init first.
	status, data, _ := ops.do(http.MethodGet, app+"/pod?id="+podID, nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(string(data)).To(ContainSubstring(`"containers":[{"name":"init","init":true,"restarts":0},{"name":"app","restarts":0}]`))
	status, data, _ = ops.do(http.MethodGet, app+"/pod?id="+url.QueryEscape("/Pod/"+ns+"/stray"), nil)
	g.Expect(status).To(Equal(http.StatusNotFound), string(data))
	g.Expect(errorOf(t, data)).To(ContainSubstring("is not in the tree of Kustomization " + ns + "/app"))

	// Logs, through the API server and the node's kubelet, bounded.
	status, data, _ = ops.do(http.MethodGet, app+"/logs?id="+podID+"&tail=3", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(string(data)).To(Equal("line 498 of app\nline 499 of app\nline 500 of app\n"), "the default container, its last 3 lines")
	g.Expect(<-asked).To(Equal("/containerLogs/" + ns + "/web-5d8f-x1/app?limitBytes=1048576&tailLines=3"))
	status, data, _ = ops.do(http.MethodGet, app+"/logs?id="+podID+"&container=init&previous=true", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(strings.Count(string(data), "\n")).To(Equal(100), "the default tail")
	g.Expect(string(data)).To(HaveSuffix("previous 500 of init\n"))
	g.Expect(<-asked).To(ContainSubstring("/init?limitBytes=1048576&previous=true&tailLines=100"))
	status, data, _ = ops.do(http.MethodGet, app+"/logs?id="+podID+"&tail=1&follow=true", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(string(data)).To(Equal("line 500 of app\nfollowed\n"), "a follow ends after MaxFollow with what came")
	g.Expect(<-asked).To(ContainSubstring("follow=true"))
	status, data, _ = ops.do(http.MethodGet, app+"/logs?id="+podID+"&tail=-2", nil)
	g.Expect(status).To(Equal(http.StatusBadRequest), string(data))
	status, data, _ = ops.do(http.MethodGet, app+"/logs?id="+url.QueryEscape("/Pod/"+ns+"/stray"), nil)
	g.Expect(status).To(Equal(http.StatusNotFound), string(data))

	// The viewer may see the Pod but not its log, nor act.
	status, data, _ = viewer.do(http.MethodGet, app+"/pod?id="+podID, nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	status, data, _ = viewer.do(http.MethodGet, app+"/logs?id="+podID, nil)
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))
	g.Expect(errorOf(t, data)).To(ContainSubstring(`cannot get resource "pods/log"`))
	for action, body := range map[string]map[string]any{
		"restart": {"id": "apps/Deployment/" + ns + "/web"},
		"scale":   {"id": "apps/Deployment/" + ns + "/web", "replicas": 3},
		"delete":  {"id": "/Pod/" + ns + "/web-5d8f-x1"},
	} {
		status, data, _ := viewer.do(http.MethodPost, app+"/resources/"+action, body)
		g.Expect(status).To(Equal(http.StatusForbidden), action+": "+string(data))
	}
	status, data, _ = viewer.do(http.MethodPost, app+"/resources/suspend", map[string]any{"id": "batch/CronJob/" + ns + "/nightly"})
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))
	g.Expect(errorOf(t, data)).To(ContainSubstring(`cannot patch resource "cronjobs"`))
	web := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web)).To(Succeed())
	g.Expect(web.Spec.Template.Annotations).NotTo(HaveKey("kubectl.kubernetes.io/restartedAt"))
	g.Expect(*web.Spec.Replicas).To(BeEquivalentTo(1))

	// The operator's actions take effect, made as the operator.
	var result struct{ Done, Note string }
	post := func(action string, body map[string]any) {
		t.Helper()
		status, data, _ := ops.do(http.MethodPost, app+"/resources/"+action, body)
		g.Expect(status).To(Equal(http.StatusOK), action+": "+string(data))
		result.Done, result.Note = "", ""
		g.Expect(json.Unmarshal(data, &result)).To(Succeed())
	}
	post("restart", map[string]any{"id": "apps/Deployment/" + ns + "/web"})
	g.Expect(result.Note).To(ContainSubstring("Plumb keeps a restart"))
	post("scale", map[string]any{"id": "apps/Deployment/" + ns + "/web", "replicas": 3})
	g.Expect(result.Done).To(Equal("Deployment " + ns + "/web scaled to 3"))
	g.Expect(result.Note).To(ContainSubstring("If Git sets spec.replicas, Kustomization " + ns + "/app reverts this change"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web)).To(Succeed())
	g.Expect(web.Spec.Template.Annotations).To(HaveKey("kubectl.kubernetes.io/restartedAt"))
	g.Expect(*web.Spec.Replicas).To(BeEquivalentTo(3))
	managers := []string{}
	for _, m := range web.ManagedFields {
		managers = append(managers, m.Manager)
	}
	g.Expect(managers).To(ContainElement("plumb-ui"))

	post("suspend", map[string]any{"id": "batch/CronJob/" + ns + "/nightly"})
	cj := &batchv1.CronJob{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, cj)).To(Succeed())
	g.Expect(cj.Spec.Suspend).To(Equal(ptr.To(true)))
	post("resume", map[string]any{"id": "batch/CronJob/" + ns + "/nightly"})
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, cj)).To(Succeed())
	g.Expect(cj.Spec.Suspend).To(Equal(ptr.To(false)))

	// Only what the tree holds, and each action on its kinds.
	status, data, _ = ops.do(http.MethodPost, app+"/resources/scale", map[string]any{"id": "apps/Deployment/" + ns + "/other", "replicas": 2})
	g.Expect(status).To(Equal(http.StatusNotFound), string(data))
	status, data, _ = ops.do(http.MethodPost, app+"/resources/delete", map[string]any{"id": "/Pod/" + ns + "/stray"})
	g.Expect(status).To(Equal(http.StatusNotFound), string(data))
	status, data, _ = ops.do(http.MethodPost, app+"/resources/scale", map[string]any{"id": "batch/CronJob/" + ns + "/nightly", "replicas": 2})
	g.Expect(status).To(Equal(http.StatusBadRequest), string(data))
	status, data, _ = ops.do(http.MethodPost, app+"/resources/scale", map[string]any{"id": "apps/Deployment/" + ns + "/web", "replicas": 100000})
	g.Expect(status).To(Equal(http.StatusBadRequest), string(data))
	status, data, _ = ops.do(http.MethodPost, app+"/resources/explode", map[string]any{"id": "apps/Deployment/" + ns + "/web"})
	g.Expect(status).To(Equal(http.StatusNotFound), string(data))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stray"}, &corev1.Pod{})).To(Succeed())

	post("delete", map[string]any{"id": "/Pod/" + ns + "/web-5d8f-x1"})
	// A Pod on a node is deleted gracefully: its kubelet removes it.
	gone := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-5d8f-x1"}, gone); !apierrors.IsNotFound(err) {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gone.DeletionTimestamp).NotTo(BeNil(), "being deleted")
	}
}
