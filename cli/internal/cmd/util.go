package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// withTimeout bounds a command by --timeout.
func withTimeout(cmd *cobra.Command, g *globals) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.timeout)
}

// onKustomization is the RunE of a `VERB kustomization NAME` command: it
// connects, reads the named Kustomization in the command's namespace and
// hands it to run, all within --timeout.
func (g *globals) onKustomization(run func(ctx context.Context, ks *kustomizev1.Kustomization) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if _, err := kindNamed(args[0], kustomizationKind); err != nil {
			return err
		}
		if err := g.kube(); err != nil {
			return err
		}
		ctx, cancel := withTimeout(cmd, g)
		defer cancel()
		key := types.NamespacedName{Namespace: g.ns, Name: args[1]}
		ks := &kustomizev1.Kustomization{}
		if err := g.client.Get(ctx, key, ks); err != nil {
			return notFound(err, kustomizationKind, key)
		}
		return run(ctx, ks)
	}
}

// onObject is the RunE of a `VERB KIND NAME` command for the kinds in
// allowed: it connects, reads the named object in the command's namespace
// and hands it to run, all within --timeout.
func (g *globals) onObject(allowed []*kind, run func(ctx context.Context, k *kind, obj client.Object) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		k, name, err := kindAndName(args, allowed...)
		if err != nil {
			return err
		}
		if err := g.kube(); err != nil {
			return err
		}
		ctx, cancel := withTimeout(cmd, g)
		defer cancel()
		key := types.NamespacedName{Namespace: g.ns, Name: name}
		obj := k.newObj()
		if err := g.client.Get(ctx, key, obj); err != nil {
			return notFound(err, k, key)
		}
		return run(ctx, k, obj)
	}
}

// onApplied is onObject for the kinds sync-controller applies: a
// Kustomization or a HelmRelease.
func (g *globals) onApplied(run func(ctx context.Context, a *applied) error) func(*cobra.Command, []string) error {
	return g.onObject([]*kind{kustomizationKind, helmReleaseKind}, func(ctx context.Context, _ *kind, obj client.Object) error {
		a, _ := appliedOf(obj)
		return run(ctx, a)
	})
}
