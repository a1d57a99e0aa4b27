package podlogs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/plan"
)

// The bounds of an application's logs: an application of a thousand
// replicas shows a few of them, each a bounded read.
const (
	// MaxPods is how many Pods Of returns in all.
	MaxPods = 20
	// MaxPodsPerObject is how many Pods of one workload or hook are read.
	MaxPodsPerObject = 5
	// MaxBytes bounds what is read of one container's log in one request
	// (the API's limitBytes, which the kubelet enforces).
	MaxBytes = 1 << 20
	// DefaultTail is the tail of each container's log when none is
	// asked for: the end of it, not all of it.
	DefaultTail = 100
	// MaxTail is the largest tail a reader may ask for.
	MaxTail = 10000
	// MaxLineBytes is the longest line Lines returns; the rest of a
	// longer line is cut.
	MaxLineBytes = 64 << 10
	// MaxOwnerDepth bounds the ownerReferences BelongsTo follows: a
	// Pod's ReplicaSet's Deployment is two.
	MaxOwnerDepth = 3
)

// workloads are the kinds in an inventory whose Pods an application's
// logs include, as group/Kind.
var workloads = map[string]bool{
	"/Pod": true, "apps/Deployment": true, "apps/StatefulSet": true, "apps/DaemonSet": true,
	"apps/ReplicaSet": true, "batch/Job": true, "batch/CronJob": true,
}

// Inventory is the inventory of a Kustomization or a HelmRelease; nil for
// anything else or before its first sync.
func Inventory(owner client.Object) []kustomizev1.InventoryEntry {
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

// kindOf is the Kind of a Kustomization or a HelmRelease.
func kindOf(owner client.Object) string {
	if _, ok := owner.(*helmv2.HelmRelease); ok {
		return helmv2.HelmReleaseKind
	}
	return kustomizev1.KustomizationKind
}

// HookSelector selects the owner's hook objects (Jobs, Pods): its
// ownership labels and the label sync-controller puts on every hook.
func HookSelector(owner client.Object) labels.Selector {
	nameKey, nsKey := manage.LabelKeys(kindOf(owner))
	sel := labels.SelectorFromSet(labels.Set{nameKey: owner.GetName(), nsKey: owner.GetNamespace()})
	req, err := labels.NewRequirement(plan.HookSyncLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	return sel.Add(*req)
}

// Of returns the Pods of the owner's hooks (its hook Pods, then its hook
// Jobs' Pods, wherever they are), then, unless hooksOnly, of the
// workloads in its inventory, each set oldest first; and how many more
// there were past MaxPods.
func Of(ctx context.Context, c client.Client, owner client.Object, hooksOnly bool) ([]corev1.Pod, int, error) {
	var out []corev1.Pod
	more := 0
	add := func(pods []corev1.Pod) {
		sort.SliceStable(pods, func(i, j int) bool {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		})
		for _, p := range pods {
			if len(out) == MaxPods {
				more++
				continue
			}
			out = append(out, p)
		}
	}
	hooks := HookSelector(owner)
	direct := &corev1.PodList{}
	if err := c.List(ctx, direct, client.MatchingLabelsSelector{Selector: hooks}, client.Limit(MaxPodsPerObject)); err != nil {
		return nil, 0, fmt.Errorf("listing the hook Pods: %w", err)
	}
	add(direct.Items)
	jobs := &unstructured.UnstructuredList{}
	jobs.SetAPIVersion("batch/v1")
	jobs.SetKind("JobList")
	if err := c.List(ctx, jobs, client.MatchingLabelsSelector{Selector: hooks}, client.Limit(MaxPods)); err != nil {
		return nil, 0, fmt.Errorf("listing the hook Jobs: %w", err)
	}
	for i := range jobs.Items {
		pods, err := selected(ctx, c, &jobs.Items[i])
		if err != nil {
			return nil, 0, err
		}
		add(pods)
	}
	if hooksOnly {
		return out, more, nil
	}
	for _, e := range Inventory(owner) {
		if !workloads[e.Group+"/"+e.Kind] || e.Kind == "CronJob" {
			// A CronJob's Pods are its Jobs': not selected by it.
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind})
		err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
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
		pods, err := selected(ctx, c, obj)
		if err != nil {
			return nil, 0, err
		}
		add(pods)
	}
	return out, more, nil
}

// selected lists a bounded page of the Pods obj's selector picks.
func selected(ctx context.Context, c client.Client, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	sel, ok := health.Selector(obj)
	if !ok {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}, client.Limit(MaxPodsPerObject)); err != nil {
		return nil, fmt.Errorf("listing the Pods of %s/%s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return pods.Items, nil
}

// BelongsTo reports whether pod is in the owner's tree: a hook of the
// owner (its labels), or in its inventory, or owned — through at most
// MaxOwnerDepth controller references (a ReplicaSet, then its
// Deployment; a Job, then its CronJob) — by a workload in its inventory.
// An owner the caller may not read is the error, not a "no".
func BelongsTo(ctx context.Context, c client.Client, owner client.Object, pod *corev1.Pod) (bool, error) {
	if HookSelector(owner).Matches(labels.Set(pod.Labels)) {
		return true, nil
	}
	inInventory := func(group, kind, namespace, name string) bool {
		for _, e := range Inventory(owner) {
			if e.Group == group && e.Kind == kind && e.Namespace == namespace && e.Name == name {
				return true
			}
		}
		return false
	}
	var cur metav1.Object = pod
	group, kind := "", "Pod"
	for range MaxOwnerDepth + 1 {
		if inInventory(group, kind, cur.GetNamespace(), cur.GetName()) {
			return true, nil
		}
		if kind != "Pod" && HookSelector(owner).Matches(labels.Set(cur.GetLabels())) {
			return true, nil // a hook Job's Pod
		}
		ref := metav1.GetControllerOf(cur)
		if ref == nil {
			return false, nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || !workloads[gv.Group+"/"+ref.Kind] {
			return false, nil
		}
		next := &unstructured.Unstructured{}
		next.SetGroupVersionKind(gv.WithKind(ref.Kind))
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, next); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("reading %s %s/%s, which owns %s: %w", ref.Kind, pod.Namespace, ref.Name, cur.GetName(), err)
		}
		cur, group, kind = next, gv.Group, ref.Kind
	}
	return false, nil
}

// Containers are the names of a Pod's containers, init containers first
// (the order they run in).
func Containers(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.InitContainers {
		out = append(out, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// Request is what a reader asks of one container's log.
type Request struct {
	Container string
	// Tail is how many of the last lines to read: nil for DefaultTail,
	// -1 for every line (still at most MaxBytes); more than MaxTail is
	// read as MaxTail.
	Tail *int64
	// SinceSeconds, when positive, keeps only newer lines.
	SinceSeconds int64
	// Previous reads the container's previous instance (after a restart).
	Previous bool
	Follow   bool
}

// Options are the pods/log options of r, with the bounds applied.
func (r Request) Options() *corev1.PodLogOptions {
	opts := &corev1.PodLogOptions{Container: r.Container, Previous: r.Previous, Follow: r.Follow, LimitBytes: ptr(MaxBytes)}
	switch {
	case r.Tail == nil:
		opts.TailLines = ptr(DefaultTail)
	case *r.Tail > MaxTail:
		opts.TailLines = ptr(MaxTail)
	case *r.Tail >= 0:
		opts.TailLines = ptr(*r.Tail)
	}
	if r.SinceSeconds > 0 {
		opts.SinceSeconds = ptr(r.SinceSeconds)
	}
	return opts
}

// Lines calls emit with each line of r, a line cut at MaxLineBytes,
// until r ends or emit returns false.
func Lines(r io.Reader, emit func(string) bool) error {
	br := bufio.NewReaderSize(r, 4<<10)
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line) < MaxLineBytes {
			line = append(line, chunk[:min(len(chunk), MaxLineBytes-len(line))]...)
		}
		if err == io.EOF {
			if len(line) > 0 {
				emit(string(line))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if isPrefix {
			continue
		}
		if !emit(string(line)) {
			return nil
		}
		line = line[:0]
	}
}

func ptr(n int64) *int64 { return &n }
