package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/ui/internal/podtest"
	"plumb.dev/ui/server"
)

func TestAnOperatorReadsLogsAndActsOnTheTreeAViewerIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "ops")
	node, asked := podtest.StandInKubelet(t, env.Client, ns)
	podtest.App(t, env.Client, ns, node)
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
