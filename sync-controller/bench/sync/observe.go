package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/benchfig"
)

// ksWatch follows one Kustomization through a watch and stamps every event
// with the time it arrived, so that "how long until the status said X" is
// measured at the moment the API server told us, not at a poll tick.
type ksWatch struct {
	w      watch.Interface
	events chan ksEvent
}

type ksEvent struct {
	ks *kustomizev1.Kustomization
	at time.Time
}

func watchKustomization(ctx context.Context, wc client.WithWatch, key client.ObjectKey) (*ksWatch, error) {
	w, err := wc.Watch(ctx, &kustomizev1.KustomizationList{}, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name})
	if err != nil {
		return nil, fmt.Errorf("watching Kustomization %s: %w", key, err)
	}
	kw := &ksWatch{w: w, events: make(chan ksEvent, 10000)}
	go func() {
		defer close(kw.events)
		for ev := range w.ResultChan() {
			if ks, ok := ev.Object.(*kustomizev1.Kustomization); ok {
				kw.events <- ksEvent{ks: ks, at: time.Now()}
			}
		}
	}()
	return kw, nil
}

// until returns the arrival time of the first event whose object satisfies
// cond, and that object.
func (kw *ksWatch) until(ctx context.Context, cond func(*kustomizev1.Kustomization) bool) (time.Time, *kustomizev1.Kustomization, error) {
	var last *kustomizev1.Kustomization
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, last, fmt.Errorf("waiting on the Kustomization: %w (last status: %s)", ctx.Err(), describeKs(last))
		case ev, ok := <-kw.events:
			if !ok {
				return time.Time{}, last, errors.New("the Kustomization watch closed")
			}
			last = ev.ks
			if cond(ev.ks) {
				return ev.at, ev.ks, nil
			}
		}
	}
}

func (kw *ksWatch) stop() { kw.w.Stop() }

func describeKs(ks *kustomizev1.Kustomization) string {
	if ks == nil {
		return "none seen"
	}
	s := fmt.Sprintf("generation %d, observed %d, lastHandled %q", ks.Generation, ks.Status.ObservedGeneration, ks.Status.LastHandledReconcileAt)
	for _, c := range ks.Status.Conditions {
		s += fmt.Sprintf("; %s=%s %s: %.300s", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// valueWatch follows the ConfigMaps and Deployments of a namespace and hands
// each change of a watched object's drift-prone value (data.key, or
// spec.replicas) to whoever waits on that object.
type valueWatch struct {
	watches []watch.Interface
	benchfig.Followers
}

func watchValues(ctx context.Context, wc client.WithWatch, ns string) (*valueWatch, error) {
	vw := &valueWatch{}
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns), client.HasLabels{kustomizev1.NameLabel})
		if err != nil {
			vw.stop()
			return nil, err
		}
		vw.watches = append(vw.watches, w)
		go func() {
			for ev := range w.ResultChan() {
				at := time.Now()
				var key, value, rv string
				switch o := ev.Object.(type) {
				case *corev1.ConfigMap:
					key, value, rv = "ConfigMap/"+o.Name, o.Data["key"], o.ResourceVersion
				case *appsv1.Deployment:
					replicas := "nil"
					if o.Spec.Replicas != nil {
						replicas = fmt.Sprint(*o.Spec.Replicas)
					}
					key, value, rv = "Deployment/"+o.Name, replicas, o.ResourceVersion
				default:
					continue
				}
				vw.Deliver(key, benchfig.Observation{ResourceVersion: rv, Value: value, At: at})
			}
		}()
	}
	return vw, nil
}

func (vw *valueWatch) stop() {
	for _, w := range vw.watches {
		w.Stop()
	}
}
