package install

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of `plumb install`.
const FieldManager = "plumb"

// PartOfLabel and PartOf mark every object deploy/ installs (its
// kustomization's labels); uninstall selects by them.
const (
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOf      = "plumb"
)

// pollInterval is how often Apply looks at what it waits for.
var pollInterval = time.Second

// Apply installs objs, as Render returns them, on the cluster c reaches,
// printing a line per step to out: the namespace and the CRDs first,
// waiting until every CRD is Established (the objects of Plumb's kinds a
// later step or a user creates need them served), then the NATS
// credentials when missing, then everything else. Every object is applied
// server-side as FieldManager with force: an install over an older one, or
// over `kubectl apply -k deploy/`, takes the fields over. It does not wait
// for the controllers: WaitReady does.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	first, rest := splitFirst(objs)
	if err := applyAll(ctx, c, first, out); err != nil {
		return err
	}
	if err := waitEstablished(ctx, c, first, out); err != nil {
		return err
	}
	if slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "StatefulSet" && u.GetName() == "nats"
	}) {
		if err := EnsureNATSCredentials(ctx, c, out); err != nil {
			return err
		}
	}
	return applyAll(ctx, c, rest, out)
}

// splitFirst separates the namespaces and CRDs from the rest.
func splitFirst(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, u := range objs {
		if u.GetKind() == "Namespace" || u.GetKind() == "CustomResourceDefinition" {
			first = append(first, u)
		} else {
			rest = append(rest, u)
		}
	}
	return first, rest
}

// applyAll applies objs in order and prints one line per kind.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	var kinds []string
	counts := map[string]int{}
	for _, u := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", Ref(u), err)
		}
		if counts[u.GetKind()] == 0 {
			kinds = append(kinds, u.GetKind())
		}
		counts[u.GetKind()]++
	}
	for _, k := range kinds {
		if counts[k] == 1 {
			name := ""
			for _, u := range objs {
				if u.GetKind() == k {
					name = Ref(u)
				}
			}
			fmt.Fprintf(out, "✚ %s applied\n", name)
			continue
		}
		fmt.Fprintf(out, "✚ %d %s objects applied\n", counts[k], k)
	}
	return nil
}

// Ref names an object as kubectl does: Kind/namespace/name.
func Ref(u interface {
	GetKind() string
	GetNamespace() string
	GetName() string
}) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// waitEstablished waits until every CRD among objs is Established.
func waitEstablished(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	var names []string
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			names = append(names, u.GetName())
		}
	}
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintf(out, "◎ waiting for %d CRDs to be established\n", len(names))
	for {
		var pending []string
		for _, name := range names {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
				return fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
			}
			if !established(crd) {
				pending = append(pending, name)
			}
		}
		if len(pending) == 0 {
			fmt.Fprintf(out, "✔ CRDs established\n")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRDs not established: %s: %w", strings.Join(pending, ", "), ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, cd := range conds {
		if m, ok := cd.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// NATSCredentials is the Secret that holds a password per NATS user
// (deploy/nats/accounts.conf); deploy/ ships none, so that no password is
// in Git or reset by an apply.
const NATSCredentials = "nats-credentials"

// natsUsers are the keys of NATSCredentials, one per user of
// deploy/nats/accounts.conf.
var natsUsers = []string{"publisher", "notification", "reader", "alerts"}

// EnsureNATSCredentials creates NATSCredentials in Namespace with a random
// password per user, as deploy/nats/credentials.sh does, unless it exists:
// an install run again never rotates a password (a rotation restarts NATS
// by hand, deploy/README.md).
func EnsureNATSCredentials(ctx context.Context, c client.Client, out io.Writer) error {
	key := types.NamespacedName{Namespace: Namespace, Name: NATSCredentials}
	err := c.Get(ctx, key, &corev1.Secret{})
	if err == nil {
		fmt.Fprintf(out, "◎ Secret/%s/%s exists: its passwords are kept\n", Namespace, NATSCredentials)
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s: %w", key, err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace,
			Name:      NATSCredentials,
			Labels:    map[string]string{PartOfLabel: PartOf, "app.kubernetes.io/name": "nats"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{},
	}
	for _, user := range natsUsers {
		// 32 random bytes as 64 hex characters, as credentials.sh writes
		// them: nothing to quote in a configuration file.
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		s.Data[user] = []byte(hex.EncodeToString(b))
	}
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created between the read and the write: keep that one.
			fmt.Fprintf(out, "◎ Secret/%s/%s exists: its passwords are kept\n", Namespace, NATSCredentials)
			return nil
		}
		return fmt.Errorf("creating Secret %s: %w", key, err)
	}
	fmt.Fprintf(out, "✚ Secret/%s/%s created with a random password per NATS user\n", Namespace, NATSCredentials)
	return nil
}

// WaitReady waits until every Deployment among objs is rolled out (as
// DeploymentReady decides), printing a line when one's state changes and
// one when it is ready.
func WaitReady(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	var names []string
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			names = append(names, u.GetName())
		}
	}
	fmt.Fprintf(out, "◎ waiting for %s to be ready\n", strings.Join(names, ", "))
	last := map[string]string{}
	for len(names) > 0 {
		var pending []string
		for _, name := range names {
			dep := &appsv1.Deployment{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: name}, dep); err != nil {
				return fmt.Errorf("reading Deployment %s/%s: %w", Namespace, name, err)
			}
			ready, why := DeploymentReady(dep)
			if ready {
				fmt.Fprintf(out, "✔ %s: %s\n", name, why)
				continue
			}
			if last[name] != why {
				fmt.Fprintf(out, "◎ %s: %s\n", name, why)
				last[name] = why
			}
			pending = append(pending, name)
		}
		names = pending
		if len(names) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %s (kubectl -n %s describe deployment %s): %w", strings.Join(names, ", "), Namespace, names[0], ctx.Err())
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// DeploymentReady says whether every wanted replica of dep is updated and
// available, as `kubectl rollout status` decides, and why not.
func DeploymentReady(dep *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	st := dep.Status
	switch {
	case st.ObservedGeneration < dep.Generation:
		return false, fmt.Sprintf("generation %d not yet observed by the Deployment controller", dep.Generation)
	case want == 0:
		return false, "scaled to 0 replicas"
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, want)
	}
	return true, fmt.Sprintf("%d/%d ready", st.AvailableReplicas, want)
}
