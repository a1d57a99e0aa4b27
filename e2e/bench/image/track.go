package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// The stages of a round, in the order the chain passes them.
var stages = []string{"policy", "commit", "applied", "deployment"}

// stageNames say what each stage's time is the time to.
var stageNames = map[string]string{
	"policy":     "ImagePolicy latestRef is the new tag",
	"commit":     "the automation pushed its commit",
	"applied":    "Kustomization applied that commit",
	"deployment": "the Deployment carries the new image",
}

// round is one tag's way from the registry to the Deployment: when each
// stage was first seen, counted from start.
type round struct {
	tag   string
	start time.Time
	// what the statuses said before the round, so a change is new
	prevCommit, prevApplied string
	at                      map[string]time.Duration
	done                    chan struct{}
}

func (r *round) String() string {
	var parts []string
	for _, s := range stages {
		if d, ok := r.at[s]; ok {
			parts = append(parts, s+" "+benchfig.Seconds(benchfig.Round(d)))
		}
	}
	return strings.Join(parts, ", ")
}

// tracker watches the four objects of the chain and stamps the current
// round's stages as the events arrive: no polling, the time an event is
// received.
type tracker struct {
	mu  sync.Mutex
	cur *round
}

func (t *tracker) stamp(stage string, reached func(r *round) bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.cur
	if r == nil {
		return
	}
	if _, seen := r.at[stage]; seen || !reached(r) {
		return
	}
	r.at[stage] = now.Sub(r.start)
	// The Kustomization's status is written after the apply, so the
	// round ends when every stage is in, whichever came last.
	if len(r.at) == len(stages) {
		close(r.done)
	}
}

// track opens the watches; they end with ctx.
func (b *bench) track(ctx context.Context) (*tracker, error) {
	t := &tracker{}
	d := b.demo
	webImage := d.WebImage
	follow := func(list client.ObjectList, ns, name string, handle func(obj client.Object)) error {
		selected := []client.ListOption{client.InNamespace(ns), client.MatchingFields{"metadata.name": name}}
		if err := b.wc.List(ctx, list, selected...); err != nil {
			return fmt.Errorf("listing %s/%s: %w", ns, name, err)
		}
		if err := apimeta.EachListItem(list, func(obj runtime.Object) error {
			handle(obj.(client.Object))
			return nil
		}); err != nil {
			return err
		}
		open := func(rv string) (watch.Interface, error) {
			return b.wc.Watch(ctx, list, append(selected, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		}
		go func() {
			_ = benchkit.Follow(ctx, list.GetResourceVersion(), open, func(ev watch.Event) {
				if obj, ok := ev.Object.(client.Object); ok && ev.Type != watch.Bookmark {
					handle(obj)
				}
			})
		}()
		return nil
	}
	if err := follow(&imagev1.ImagePolicyList{}, d.Namespace, localenv.DemoImageName, func(obj client.Object) {
		p := obj.(*imagev1.ImagePolicy)
		t.stamp("policy", func(r *round) bool { return p.Status.LatestRef != nil && p.Status.LatestRef.Tag == r.tag })
	}); err != nil {
		return nil, err
	}
	if err := follow(&imagev1.ImageUpdateAutomationList{}, d.Namespace, localenv.DemoAutomationName, func(obj client.Object) {
		a := obj.(*imagev1.ImageUpdateAutomation)
		t.stamp("commit", func(r *round) bool { c := a.Status.LastPushCommit; return c != "" && c != r.prevCommit })
	}); err != nil {
		return nil, err
	}
	if err := follow(&kustomizev1.KustomizationList{}, d.Namespace, "demo", func(obj client.Object) {
		k := obj.(*kustomizev1.Kustomization)
		t.stamp("applied", func(r *round) bool { a := k.Status.LastAppliedRevision; return a != "" && a != r.prevApplied })
	}); err != nil {
		return nil, err
	}
	if err := follow(&appsv1.DeploymentList{}, d.AppNamespace, "hello", func(obj client.Object) {
		dep := obj.(*appsv1.Deployment)
		t.stamp("deployment", func(r *round) bool {
			cs := dep.Spec.Template.Spec.Containers
			return len(cs) > 0 && cs[0].Image == webImage+":"+r.tag
		})
	}); err != nil {
		return nil, err
	}
	return t, nil
}

// begin starts a round for the next tag, remembering what the statuses
// say now.
func (b *bench) begin(ctx context.Context, t *tracker) (*round, error) {
	d := b.demo
	a := &imagev1.ImageUpdateAutomation{}
	if err := b.env.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: localenv.DemoAutomationName}, a); err != nil {
		return nil, err
	}
	k := &kustomizev1.Kustomization{}
	if err := b.env.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: "demo"}, k); err != nil {
		return nil, err
	}
	r := &round{tag: fmt.Sprintf("1.0.%d", b.next), prevCommit: a.Status.LastPushCommit, prevApplied: k.Status.LastAppliedRevision,
		at: map[string]time.Duration{}, done: make(chan struct{})}
	t.mu.Lock()
	r.start = time.Now()
	t.cur = r
	t.mu.Unlock()
	return r, nil
}

// wait waits for the round's Deployment stage, then ends the round.
func (b *bench) wait(ctx context.Context, t *tracker, r *round) error {
	defer func() {
		t.mu.Lock()
		t.cur = nil
		t.mu.Unlock()
	}()
	select {
	case <-r.done:
		return nil
	case <-time.After(b.c.roundTimeout):
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("%s did not pass every stage within %s (seen: %s)", r.tag, b.c.roundTimeout, r)
	case <-ctx.Done():
		return ctx.Err()
	}
}
