package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/testenv"
)

// remoteDrift starts a second control plane, syncs the mixed workload into
// it through a Kustomization whose spec.kubeConfig names it (the
// Kustomization, its inventory and status stay in the bench's cluster), and
// makes foreign edits there, alternating with edits of the local
// Kustomization (local): issue 18 asks that a remote cluster's drift be
// reverted as fast as a local one's.
// The remote cluster's requests are not counted: only its latency is
// compared.
//
// driftChunk is how many edits go to one side before the other's turn.
const driftChunk = 5

func (b *bench) remoteDrift(ctx context.Context, local *kustomizev1.Kustomization) ([]time.Duration, int, error) {
	fmt.Fprintf(os.Stderr, ">> starting a second kube-apiserver and etcd as the remote cluster\n")
	remote, err := testenv.Start(testenv.WithoutNATS())
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if err := remote.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the remote cluster:", err)
		}
	}()
	rc, err := client.NewWithWatch(remote.Config, client.Options{Scheme: remote.Scheme})
	if err != nil {
		return nil, 0, err
	}
	ns, err := b.env.Namespace(ctx, "bench-remote")
	if err != nil {
		return nil, 0, err
	}
	// The objects go to the namespace of the same name in the remote
	// cluster, which the tenant's kubeconfig may write.
	if err := rc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, 0, err
	}
	kubeconfig, err := clientcmd.Write(*remote.Kubeconfig())
	if err != nil {
		return nil, 0, err
	}
	if err := b.wc.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"},
		Data:       map[string][]byte{"value": kubeconfig},
	}); err != nil {
		return nil, 0, err
	}
	ks := newKustomization(ns)
	ks.Spec.KubeConfig = &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: "remote"}}
	ks, s, err := b.initialSync(ctx, ks, mixed, "", nil)
	if err != nil {
		return nil, 0, fmt.Errorf("initial sync into the remote cluster: %w", err)
	}
	b.res.remoteInitial = s
	// The edits alternate between the local Kustomization and the remote
	// one, a few at a time, so both see the same load: a second API
	// server and etcd on the same cores, and whatever else runs.
	var lat []time.Duration
	failures := 0
	// Each chunk edits objects of its own, and none the local drift
	// figure edited (the second half of a list twice as long): an object
	// edited again within --drift-fight-window would be a fight, corrected
	// with a backoff.
	targets := driftTargets(mixed, b.c.objects, 2*b.c.driftEdits)[b.c.driftEdits:]
	for done := 0; done < len(targets); done += driftChunk {
		chunk := targets[done:min(done+driftChunk, len(targets))]
		l, f, err := b.driftIn(ctx, b.wc, local, chunk)
		if err != nil {
			return nil, 0, fmt.Errorf("local edits beside the remote ones: %w", err)
		}
		b.res.localBesideRemote, b.res.localBesideRemoteFailures = append(b.res.localBesideRemote, l...), b.res.localBesideRemoteFailures+f
		r, f, err := b.driftIn(ctx, rc, ks, chunk)
		if err != nil {
			return nil, 0, err
		}
		lat, failures = append(lat, r...), failures+f
	}
	// Deleting the Kustomization prunes the remote objects and stops the
	// remote cluster's watches before its API server goes.
	if err := b.wc.Delete(ctx, ks); err != nil {
		return nil, 0, err
	}
	if err := b.waitGone(ctx, ks, 5*time.Minute); err != nil {
		return nil, 0, err
	}
	return lat, failures, nil
}
