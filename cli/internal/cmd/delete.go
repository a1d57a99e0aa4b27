package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxAnswer bounds the line read as the answer to a confirmation prompt:
// a pipe of anything but a short answer is not read to its end.
const maxAnswer = 256

func newDeleteCmd(g *globals) *cobra.Command {
	var silent, wait bool
	c := &cobra.Command{
		Use:   "delete source [git|helm|chart|oci|bucket]|image [repository|policy|update]|KIND NAME",
		Short: "Delete a Plumb object, after asking for confirmation",
		Long: "delete deletes one Plumb object of any kind in the namespace, as Flux's `flux delete`\n" +
			"does. It first says what the deletion does beyond the object: a Kustomization with\n" +
			"spec.prune, or a HelmRelease (an uninstall), has sync-controller delete the objects\n" +
			"it manages before it goes; then it asks \"Are you sure…? [y/N]\" and deletes only on\n" +
			"y or yes. --silent skips the question.\n\n" +
			"An object with finalizers stays, marked for deletion, until its controller is done:\n" +
			"with --wait, delete waits for it to be gone (within --timeout).\n\n" +
			"Exit code 1 when the answer was not yes: nothing was deleted.",
		Example: "  plumb delete kustomization podinfo -n team-a\n  plumb delete source git podinfo --silent\n" +
			"  plumb delete helmrelease podinfo --wait\n  plumb delete alert-provider slack --silent",
		Args:              cobra.ArbitraryArgs, // kindAndName checks them
		ValidArgsFunction: g.completeKindAndName(allKinds),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := kindAndName(args, allKinds...)
			if err != nil {
				return err
			}
			return g.run(cmd, func(ctx context.Context) error {
				return g.deleteObject(ctx, cmd.InOrStdin(), k, types.NamespacedName{Namespace: g.ns, Name: name}, silent, wait)
			})
		},
	}
	f := c.Flags()
	// No -s: kubectl's connection flags give it to --server.
	f.BoolVar(&silent, "silent", false, "Delete without asking for confirmation.")
	f.BoolVar(&wait, "wait", false, "Wait until the object is gone, its finalizers done (a Kustomization's prune, a HelmRelease's uninstall).")
	return c
}

// deleteObject reads the object, says what deleting it does, asks (unless
// silent) and deletes exactly the object shown: a precondition on its UID
// keeps an object recreated meanwhile under the same name.
func (g *globals) deleteObject(ctx context.Context, in io.Reader, k *kind, key types.NamespacedName, silent, wait bool) error {
	obj := k.newObj()
	if err := g.client.Get(ctx, key, obj); err != nil {
		return notFound(err, k, key)
	}
	if obj.GetDeletionTimestamp() != nil {
		fmt.Fprintf(g.out, "◎ %s is already being deleted (finalizers: %s)\n", ref(k, obj), strings.Join(obj.GetFinalizers(), ", "))
		if wait {
			return g.waitGone(ctx, k, obj)
		}
		return nil
	}
	if note := deletionNote(obj); note != "" {
		fmt.Fprintf(g.out, "◎ %s\n", note)
	}
	if !silent {
		fmt.Fprintf(g.out, "Are you sure you want to delete this %s (%s)? [y/N] ", k.Kind, ref(k, obj))
		if !confirmed(in) {
			fmt.Fprintln(g.out)
			return negative(fmt.Errorf("aborted: %s was not deleted", ref(k, obj)))
		}
	}
	fmt.Fprintf(g.out, "► deleting %s\n", ref(k, obj))
	uid := obj.GetUID()
	if err := g.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s was deleted meanwhile", ref(k, obj))
		}
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%s was replaced by a new object of the same name meanwhile: not deleted", ref(k, obj))
		}
		return fmt.Errorf("deleting %s: %w", ref(k, obj), err)
	}
	// What is left after the call: nothing, or the object marked for
	// deletion until its finalizers are done.
	err := g.client.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != uid):
		fmt.Fprintf(g.out, "✔ %s deleted\n", ref(k, obj))
		return nil
	case err != nil:
		return fmt.Errorf("reading %s after deleting it: %w", ref(k, obj), err)
	}
	if !wait {
		fmt.Fprintf(g.out, "✔ %s marked for deletion; it goes once its finalizers are done (%s)\n", ref(k, obj), strings.Join(obj.GetFinalizers(), ", "))
		return nil
	}
	return g.waitGone(ctx, k, obj)
}

// deletionNote says what deleting obj does beyond the object itself; ""
// when nothing. sync-controller's finalizer prunes what a Kustomization
// with spec.prune or a HelmRelease (always: an uninstall) manages, unless
// it is suspended.
func deletionNote(obj client.Object) string {
	a, ok := appliedOf(obj)
	if !ok {
		return ""
	}
	n := 0
	if a.Inventory != nil {
		n = len(a.Inventory.Entries)
	}
	switch {
	case n == 0:
		return ""
	case a.kind.status(obj).suspended:
		return fmt.Sprintf("%s is suspended: the %d objects it manages stay in the cluster", ref(a.kind, obj), n)
	case a.IsHelmRelease():
		return fmt.Sprintf("deleting %s uninstalls its release: the %d objects it manages are deleted too", ref(a.kind, obj), n)
	case a.Prune:
		return fmt.Sprintf("%s prunes (spec.prune): the %d objects it manages are deleted too", ref(a.kind, obj), n)
	}
	return fmt.Sprintf("%s does not prune: the %d objects it manages stay in the cluster", ref(a.kind, obj), n)
}

// confirmed reads one line from in: yes for "y" or "yes" in any case, no
// for anything else, an empty line or no input at all.
func confirmed(in io.Reader) bool {
	if in == nil {
		return false
	}
	line, err := bufio.NewReaderSize(io.LimitReader(in, maxAnswer), maxAnswer).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// waitGone waits until obj (this UID) no longer exists.
func (g *globals) waitGone(ctx context.Context, k *kind, obj client.Object) error {
	uid, key := obj.GetUID(), client.ObjectKeyFromObject(obj)
	fmt.Fprintf(g.out, "◎ waiting for %s to be gone\n", ref(k, obj))
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		cur := k.newObj()
		err := g.client.Get(ctx, key, cur)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != uid):
			fmt.Fprintf(g.out, "✔ %s deleted\n", ref(k, obj))
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("reading %s: %w", ref(k, obj), err)
		case err == nil:
			obj = cur
			if msg, waits := awaitsConfirmation(cur); waits {
				return negative(fmt.Errorf("%s: %s", ref(k, obj), oneLine(msg)))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s to be deleted: finalizers %s remain; is its controller running?", ref(k, obj), strings.Join(obj.GetFinalizers(), ", "))
		case <-ticker.C:
		}
	}
}
