package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// fakeCluster lists like the API server: by kind, namespace and selector,
// at most limit, and remembers what was asked.
type fakeCluster struct {
	objs  []unstructured.Unstructured
	calls []string
}

func (f *fakeCluster) list(_ context.Context, apiVersion, kind, ns string, sel labels.Selector, limit int64) ([]unstructured.Unstructured, error) {
	f.calls = append(f.calls, fmt.Sprintf("%s %s %s limit %d", kind, ns, sel, limit))
	var out []unstructured.Unstructured
	for _, o := range f.objs {
		if o.GetAPIVersion() == apiVersion && o.GetKind() == kind && o.GetNamespace() == ns && sel.Matches(labels.Set(o.GetLabels())) {
			if int64(len(out)) == limit {
				break
			}
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

func mustObj(t *testing.T, m map[string]any) unstructured.Unstructured {
	t.Helper()
	return unstructured.Unstructured{Object: m}
}

const webUID = types.UID("uid-web")

// rolloutDeployment is Deployment apps/web at revision 2: two ReplicaSets
// (revision 1, hash old; revision 2, hash new), an old Pod running and
// ready, and the new Pods as given.
func rolloutDeployment(t *testing.T, newPods ...map[string]any) (*unstructured.Unstructured, *fakeCluster) {
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "apps", "uid": string(webUID),
			"annotations": map[string]any{"deployment.kubernetes.io/revision": "2"}},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
	}}
	rs := func(rev, hash string) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": map[string]any{
			"name": "web-" + hash, "namespace": "apps",
			"labels":          map[string]any{"app": "web", "pod-template-hash": hash},
			"annotations":     map[string]any{"deployment.kubernetes.io/revision": rev},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": string(webUID)}},
		}}
	}
	f := &fakeCluster{}
	f.objs = append(f.objs, mustObj(t, rs("1", "old")), mustObj(t, rs("2", "new")),
		mustObj(t, podOf("web-old-1", "old", time.Unix(100, 0), readyWeb())))
	for i, p := range newPods {
		f.objs = append(f.objs, mustObj(t, podOf(fmt.Sprintf("web-new-%d", i), "new", time.Unix(int64(200+i), 0), p)))
	}
	return d, f
}

func podOf(name, hash string, created time.Time, status map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
		"name": name, "namespace": "apps", "creationTimestamp": metav1.NewTime(created).UTC().Format(time.RFC3339),
		"labels": map[string]any{"app": "web", "pod-template-hash": hash},
	}, "spec": map[string]any{"containers": []any{map[string]any{
		"name": "web", "image": "registry.example/web:" + hash,
		"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": int64(8080)}},
	}}}, "status": status}
}

func readyWeb() map[string]any {
	return map[string]any{"phase": "Running",
		"conditions":        []any{map[string]any{"type": "Ready", "status": "True"}},
		"containerStatuses": []any{map[string]any{"name": "web", "ready": true, "started": true, "state": map[string]any{"running": map[string]any{}}}}}
}

func notReady(cs map[string]any) map[string]any {
	return map[string]any{"phase": "Running",
		"conditions": []any{
			map[string]any{"type": "PodScheduled", "status": "True"},
			map[string]any{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [web]"},
		},
		"containerStatuses": []any{cs}}
}

func TestAnUnhealthyDeploymentIsExplainedByItsNewestPods(t *testing.T) {
	progressing := Result{Status: Progressing, Message: "1 of 2 replicas updated"}
	for _, tc := range []struct {
		name string
		pod  map[string]any
		want string
	}{{
		name: "crash loop",
		pod: notReady(map[string]any{"name": "web", "ready": false, "restartCount": int64(5),
			"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff", "message": "back-off 2m40s restarting failed container=web pod=web-new-0"}},
			"lastState": map[string]any{"terminated": map[string]any{"exitCode": int64(3), "reason": "Error"}}}),
		want: "1 of 2 replicas updated; Pod web-new-0 container web is CrashLoopBackOff (last exit 3, Error, 5 restarts)",
	}, {
		name: "image pull back-off",
		pod: map[string]any{"phase": "Pending", "containerStatuses": []any{map[string]any{"name": "web", "ready": false,
			"state": map[string]any{"waiting": map[string]any{"reason": "ImagePullBackOff", "message": `Back-off pulling image "registry.example/web:new"`}}}}},
		want: `1 of 2 replicas updated; Pod web-new-0 container web is ImagePullBackOff (image registry.example/web:new): Back-off pulling image "registry.example/web:new"`,
	}, {
		name: "first pull failure",
		pod: map[string]any{"phase": "Pending", "containerStatuses": []any{map[string]any{"name": "web", "ready": false,
			"state": map[string]any{"waiting": map[string]any{"reason": "ErrImagePull", "message": "failed to pull: not found"}}}}},
		want: "1 of 2 replicas updated; Pod web-new-0 container web is ErrImagePull (image registry.example/web:new): failed to pull: not found",
	}, {
		name: "readiness never passes",
		pod: notReady(map[string]any{"name": "web", "ready": false, "started": true, "restartCount": int64(0),
			"state": map[string]any{"running": map[string]any{"startedAt": "2026-01-01T00:00:00Z"}}}),
		want: "1 of 2 replicas updated; Pod web-new-0 container web is not ready: readiness probe failing (Pod condition Ready=False ContainersNotReady)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, f := rolloutDeployment(t, tc.pod)
			got := WithPods(context.Background(), d, progressing, f.list)
			if got.Status != Progressing || got.Message != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
			if len(f.calls) != 2 || !strings.Contains(f.calls[1], "pod-template-hash=new") {
				t.Fatalf("lookups %q: want the ReplicaSets, then the Pods of the new one", f.calls)
			}
		})
	}
}

// The lookup is bounded whatever the replica count: a thousand crash-looping
// Pods cost one page of MaxPodsListed, and the message names one of them.
func TestAPodLookupIsBounded(t *testing.T) {
	crash := notReady(map[string]any{"name": "web", "ready": false, "restartCount": int64(1),
		"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}},
		"lastState": map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error"}}})
	pods := make([]map[string]any, 1000)
	for i := range pods {
		pods[i] = crash
	}
	d, f := rolloutDeployment(t, pods...)
	got := WithPods(context.Background(), d, Result{Status: Degraded, Message: "rollout exceeded its progress deadline"}, f.list)
	want := fmt.Sprintf("(and %d more Pods)", MaxPodsListed-1)
	if !strings.Contains(got.Message, "container web is CrashLoopBackOff (last exit 1, Error, 1 restart)") || !strings.HasSuffix(got.Message, want) {
		t.Fatalf("got %q, want one Pod named and %q", got.Message, want)
	}
	wantCalls := []string{
		fmt.Sprintf("ReplicaSet apps app=web limit %d", MaxReplicaSetsListed),
		fmt.Sprintf("Pod apps app=web,pod-template-hash=new limit %d", MaxPodsListed),
	}
	if strings.Join(f.calls, "\n") != strings.Join(wantCalls, "\n") {
		t.Fatalf("lookups %q, want %q", f.calls, wantCalls)
	}
}

// A healthy workload, another kind, or new Pods that are fine cost nothing
// or add nothing.
func TestPodsExplainOnlyAnUnhealthyWorkload(t *testing.T) {
	d, f := rolloutDeployment(t, readyWeb())
	healthy := Result{Status: Healthy, Message: "2 of 2 replicas updated and available"}
	if got := WithPods(context.Background(), d, healthy, f.list); got != healthy || len(f.calls) != 0 {
		t.Fatalf("healthy: got %q after lookups %q, want it unchanged and no lookup", got, f.calls)
	}
	progressing := Result{Status: Progressing, Message: "1 of 2 updated replicas available"}
	if got := WithPods(context.Background(), d, progressing, f.list); got != progressing {
		t.Fatalf("ready new Pods: got %q, want it unchanged", got)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "apps"}}}
	f.calls = nil
	if got := WithPods(context.Background(), cm, progressing, f.list); got != progressing || len(f.calls) != 0 {
		t.Fatalf("a ConfigMap: got %q after lookups %q", got, f.calls)
	}
}

// A StatefulSet's newest Pods carry its updateRevision; a DaemonSet's its
// template generation: one List each, no ReplicaSets.
func TestStatefulSetsAndDaemonSetsListOnlyTheirNewestPods(t *testing.T) {
	sts := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "namespace": "apps"},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "db"}}},
		"status":   map[string]any{"updateRevision": "db-abc"},
	}}
	ds := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "agent", "namespace": "apps", "annotations": map[string]any{"deprecated.daemonset.template.generation": "4"}},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "agent"}}},
	}}
	f := &fakeCluster{}
	r := Result{Status: Progressing}
	WithPods(context.Background(), sts, r, f.list)
	WithPods(context.Background(), ds, r, f.list)
	want := []string{
		fmt.Sprintf("Pod apps app=db,controller-revision-hash=db-abc limit %d", MaxPodsListed),
		fmt.Sprintf("Pod apps app=agent,pod-template-generation=4 limit %d", MaxPodsListed),
	}
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lookups %q, want %q", f.calls, want)
	}
}
