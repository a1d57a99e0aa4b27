package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/plan"
)

// The bounds of `plumb logs --kustomization`: an application of a
// thousand replicas prints a few of them, each a bounded read.
const (
	// maxAppLogPods is how many Pods are read in all.
	maxAppLogPods = 20
	// maxPodsPerObject is how many Pods of one workload or hook are read.
	maxPodsPerObject = 5
	// maxLogBytes bounds what is read of one container's log.
	maxLogBytes = 1 << 20
	// defaultAppTail is --tail's value for an application's Pods when it
	// is not given: the end of each container's log, not all of it.
	defaultAppTail = 100
)

// appLogs prints the logs of the Pods of an application's objects and of
// its hooks (Argo CD's `argocd app logs`), each line prefixed with its
// Pod and container as `kubectl logs --prefix` does.
func (g *globals) appLogs(ctx context.Context, o logOptions) error {
	if o.kind != "" || o.name != "" || o.level != "" || o.logDir != "" {
		return errors.New("--kustomization and --helmrelease print Pods' logs: --kind, --name, --level and --log-dir filter the controllers' logs and do not apply")
	}
	if o.kustomization != "" && o.helmRelease != "" {
		return errors.New("give --kustomization or --helmrelease, not both")
	}
	if o.tail < -1 {
		return fmt.Errorf("--tail %d: want a count, or -1 for every line", o.tail)
	}
	if err := g.kube(); err != nil {
		return err
	}
	ns := g.namespaceFlag()
	if ns == "" {
		ns = g.ns
	}
	kind, name := kustomizev1.KustomizationKind, o.kustomization
	var owner client.Object = &kustomizev1.Kustomization{}
	if o.helmRelease != "" {
		kind, name, owner = helmv2.HelmReleaseKind, o.helmRelease, &helmv2.HelmRelease{}
	}
	if err := g.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, owner); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	pods, more, err := g.podsOfApp(ctx, kind, owner, o.hooksOnly)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		what := "objects or hooks"
		if o.hooksOnly {
			what = "hooks"
		}
		fmt.Fprintf(g.errOut, "%s %s/%s: no Pods of its %s\n", kind, ns, name, what)
		return nil
	}
	if more > 0 {
		fmt.Fprintf(g.errOut, "%d more Pods not shown (at most %d, %d per object)\n", more, maxAppLogPods, maxPodsPerObject)
	}
	cs, err := kubernetes.NewForConfig(g.cfg)
	if err != nil {
		return err
	}
	return printPodLogs(ctx, g.out, g.errOut, cs, pods, o)
}

// podsOfApp returns the Pods of the owner's hooks (the Jobs and Pods
// labelled with its name and plumb.dev/hook-sync, wherever they are), then
// of the workloads in its inventory, each set oldest first; and how many
// more there were past the bounds.
func (g *globals) podsOfApp(ctx context.Context, kind string, owner client.Object, hooksOnly bool) ([]corev1.Pod, int, error) {
	var out []corev1.Pod
	more := 0
	add := func(pods []corev1.Pod) {
		sort.SliceStable(pods, func(i, j int) bool {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		})
		for _, p := range pods {
			if len(out) == maxAppLogPods {
				more++
				continue
			}
			out = append(out, p)
		}
	}
	hooks, err := g.hookSelector(kind, owner)
	if err != nil {
		return nil, 0, err
	}
	// Hook Pods of their own, then hook Jobs' Pods.
	direct := &corev1.PodList{}
	if err := g.client.List(ctx, direct, client.MatchingLabelsSelector{Selector: hooks}, client.Limit(maxPodsPerObject)); err != nil {
		return nil, 0, fmt.Errorf("listing the hook Pods: %w", err)
	}
	add(direct.Items)
	jobs := &unstructured.UnstructuredList{}
	jobs.SetAPIVersion("batch/v1")
	jobs.SetKind("JobList")
	if err := g.client.List(ctx, jobs, client.MatchingLabelsSelector{Selector: hooks}, client.Limit(maxAppLogPods)); err != nil {
		return nil, 0, fmt.Errorf("listing the hook Jobs: %w", err)
	}
	for i := range jobs.Items {
		pods, err := g.podsOf(ctx, &jobs.Items[i])
		if err != nil {
			return nil, 0, err
		}
		add(pods)
	}
	if hooksOnly {
		return out, more, nil
	}
	for _, e := range inventoryOf(owner) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(apiVersion(e.Group, e.Version))
		obj.SetKind(e.Kind)
		switch e.Group + "/" + e.Kind {
		case "/Pod", "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "apps/ReplicaSet", "batch/Job":
		default:
			continue
		}
		err := g.client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s/%s/%s: %w", e.Kind, e.Namespace, e.Name, err)
		}
		if e.Kind == "Pod" {
			p := corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
				return nil, 0, fmt.Errorf("reading Pod/%s/%s: %w", e.Namespace, e.Name, err)
			}
			add([]corev1.Pod{p})
			continue
		}
		pods, err := g.podsOf(ctx, obj)
		if err != nil {
			return nil, 0, err
		}
		add(pods)
	}
	return out, more, nil
}

// hookSelector selects the owner's hook objects: its ownership labels and
// the label every hook carries.
func (g *globals) hookSelector(kind string, owner client.Object) (labels.Selector, error) {
	nameKey, nsKey := manage.LabelKeys(kind)
	sel := labels.SelectorFromSet(labels.Set{nameKey: owner.GetName(), nsKey: owner.GetNamespace()})
	req, err := labels.NewRequirement(plan.HookSyncLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return sel.Add(*req), nil
}

// podsOf lists a bounded page of the Pods obj's selector picks.
func (g *globals) podsOf(ctx context.Context, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	sel, ok := health.Selector(obj)
	if !ok {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := g.client.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}, client.Limit(maxPodsPerObject)); err != nil {
		return nil, fmt.Errorf("listing the Pods of %s/%s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return pods.Items, nil
}

func inventoryOf(owner client.Object) []kustomizev1.InventoryEntry {
	var inv *kustomizev1.Inventory
	switch o := owner.(type) {
	case *kustomizev1.Kustomization:
		inv = o.Status.Inventory
	case *helmv2.HelmRelease:
		inv = o.Status.Inventory
	}
	if inv == nil {
		return nil
	}
	return inv.Entries
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// printPodLogs prints each container's log (init containers first), the
// last o.tail lines of it (defaultAppTail unless given), at most
// maxLogBytes, prefixed "[pod/NAME/CONTAINER] ". With o.follow every
// container is streamed at once until ctx ends. A log that cannot be read
// is reported and the others are still printed; the error counts only
// when none could be.
func printPodLogs(ctx context.Context, out, errOut io.Writer, cs kubernetes.Interface, pods []corev1.Pod, o logOptions) error {
	var tail *int64 // --tail -1 given: every line
	switch {
	case o.tail >= 0:
		tail = ptrInt64(int64(o.tail))
	case !o.tailSet:
		tail = ptrInt64(defaultAppTail)
	}
	type stream struct {
		pod       corev1.Pod
		container string
	}
	var streams []stream
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if o.containerSet && c.Name != o.container {
				continue
			}
			streams = append(streams, stream{p, c.Name})
		}
	}
	var mu sync.Mutex
	var failed []error
	read := func(s stream) {
		opts := &corev1.PodLogOptions{Container: s.container, TailLines: tail, LimitBytes: ptrInt64(maxLogBytes), Follow: o.follow}
		if o.since > 0 {
			secs := int64(o.since.Seconds()) + 1
			opts.SinceSeconds = &secs
		}
		prefix := fmt.Sprintf("[pod/%s/%s] ", s.pod.Name, s.container)
		rc, err := cs.CoreV1().Pods(s.pod.Namespace).GetLogs(s.pod.Name, opts).Stream(ctx)
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, fmt.Errorf("reading the log of pod %s/%s container %s: %w", s.pod.Namespace, s.pod.Name, s.container, err))
			fmt.Fprintf(errOut, "%s%v\n", prefix, failed[len(failed)-1])
			return
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if !o.follow {
			// One container after the other: its lines stay together.
			for sc.Scan() {
				fmt.Fprintln(out, prefix+sc.Text())
			}
			return
		}
		for sc.Scan() {
			mu.Lock()
			fmt.Fprintln(out, prefix+sc.Text())
			mu.Unlock()
		}
	}
	if o.follow {
		var wg sync.WaitGroup
		for _, s := range streams {
			wg.Add(1)
			go func() { defer wg.Done(); read(s) }()
		}
		wg.Wait()
	} else {
		for _, s := range streams {
			read(s)
		}
	}
	if len(streams) > 0 && len(failed) == len(streams) {
		return fmt.Errorf("reading the logs: %w", errors.Join(failed...))
	}
	return nil
}

func ptrInt64(n int64) *int64 { return &n }
