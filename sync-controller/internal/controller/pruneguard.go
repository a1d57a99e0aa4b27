package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/reconcile"
)

// PruneGuard holds sync-controller's defaults for the prune guard
// (docs/design/prune-guard.md).
type PruneGuard struct {
	// MaxPercent is the share of the inventory, in percent, one sync may
	// prune without confirmation when a Kustomization sets no
	// spec.maxPrunePercent, and for every HelmRelease (--max-prune-percent).
	MaxPercent int
	// MinObjects is the smallest inventory the share guard applies to
	// (--prune-guard-min-objects); pruning all of an inventory of any size
	// is guarded.
	MinObjects int
}

// DefaultPruneGuard is the guard of a reconciler that sets none: more than
// half of an inventory of four objects or more.
var DefaultPruneGuard = PruneGuard{MaxPercent: 50, MinObjects: 4}

// BindFlags registers the guard's flags, defaulting to DefaultPruneGuard.
func (o *PruneGuard) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxPercent, "max-prune-percent", DefaultPruneGuard.MaxPercent,
		"The largest share of a Kustomization's or HelmRelease's inventory, in percent, one sync may prune without confirmation, unless a Kustomization's spec.maxPrunePercent says otherwise; 100 turns the share guard off.")
	fs.IntVar(&o.MinObjects, "prune-guard-min-objects", DefaultPruneGuard.MinObjects,
		"The smallest inventory the --max-prune-percent share guard applies to; a sync that would prune all of an inventory is guarded whatever its size.")
}

// holds says why a sync that would prune removed of the total objects of
// the inventory is held, or "" when it may proceed. Pruning everything is
// spec.allowEmpty's to allow (a HelmRelease has none: only a confirmation
// lets it through); pruning part of an inventory of at least MinObjects
// objects is held above maxPrunePercent (the spec's, else MaxPercent).
func (o PruneGuard) holds(spec syncSpec, removed, total int) string {
	switch {
	case removed == 0 || !spec.Prune || !spec.Guarded:
		return ""
	case removed >= total:
		if spec.AllowEmpty {
			return ""
		}
		if !spec.GuardFields {
			return "all of the inventory"
		}
		return "all of the inventory, and spec.allowEmpty is not set"
	case total < o.MinObjects:
		return ""
	}
	max, from := o.MaxPercent, "sync-controller's --max-prune-percent"
	if spec.MaxPrunePercent != nil {
		max, from = int(*spec.MaxPrunePercent), "spec.maxPrunePercent"
	}
	if removed*100 <= max*total {
		return ""
	}
	return fmt.Sprintf("%d%% of the inventory, more than the %d%% that %s allows", removed*100/total, max, from)
}

// HoldsShare is holds for a kind without spec.allowEmpty or
// spec.maxPrunePercent (an ObjectSet): pruning all of an inventory, or
// more than MaxPercent of one of MinObjects or more, is held; "" lets
// the prune through.
func (o PruneGuard) HoldsShare(removed, total int) string {
	return o.holds(syncSpec{Prune: true, Guarded: true}, removed, total)
}

// pruneGuard is the reconciler's guard, DefaultPruneGuard when unset.
func (r *Syncer) pruneGuard() PruneGuard {
	if r.PruneGuard == nil {
		return DefaultPruneGuard
	}
	return *r.PruneGuard
}

// guardPrune holds, before anything is applied, a sync whose render would
// prune all of the inventory (unless spec.allowEmpty) or more of it than
// maxPrunePercent allows: nothing is applied, no hook runs and nothing is
// deleted, so the cluster stays at the last applied revision. The
// Kustomization or HelmRelease annotated plumb.dev/confirm-prune with the
// digest of this render lets it through. Sets Ready=False reason PruneGuarded, naming how
// many objects would go, out of how many, and which rule holds them; records
// one PruneGuarded event per held render, not one per retry.
func (s *syncRun) guardPrune(ctx context.Context) error {
	var total int
	if s.prev.Inventory != nil {
		total = len(s.prev.Inventory.Entries)
	}
	removed := s.removedObjects()
	why := s.r.pruneGuard().holds(s.spec, len(removed), total)
	if why == "" && (!s.spec.Prune || len(removed) == 0) {
		return nil
	}
	if s.obj.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation] == s.digest {
		if why != "" {
			log.FromContext(ctx).Info("prune confirmed by annotation", "digest", s.digest, "prune", len(removed), "of", total)
		}
		return nil
	}
	asking, err := s.askingConfirmation(ctx, removed, manage.LeftTheSet)
	if err != nil {
		return err
	}
	var msg string
	switch {
	case why != "":
		names := make([]string, 0, len(removed))
		for _, o := range removed {
			names = append(names, object.IDOf(o).String())
		}
		msg = fmt.Sprintf("prune guard: revision %s would prune %d of %d objects (%s): %s",
			s.revision, len(removed), total, why, strings.Join(message.Names(names, 10), ", "))
		if len(asking) > 0 {
			msg += fmt.Sprintf("; of them, %s ask for a confirmation", strings.Join(message.Names(asking, 10), ", "))
		}
	case len(asking) > 0:
		msg = fmt.Sprintf("prune guard: revision %s would prune %d object(s) that ask for a confirmation: %s",
			s.revision, len(asking), strings.Join(message.Names(asking, 10), ", "))
	default:
		return nil
	}
	msg += fmt.Sprintf(". Nothing was applied or deleted; to go ahead, confirm this render with the annotation %s=%s (plumb confirm-prune %s %s)",
		kustomizev1.ConfirmPruneAnnotation, s.digest, strings.ToLower(s.owner.Kind), s.obj.GetName())
	if prev := conditions.Get(s.obj, meta.ReadyCondition); prev == nil || prev.Status != metav1.ConditionFalse ||
		prev.Reason != kustomizev1.PruneGuardedReason || prev.Message != msg {
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.PruneGuardedReason, msg, events.WithRevision(s.revision),
			events.WithMetadata(map[string]string{"prune": fmt.Sprint(len(removed)), "inventory": fmt.Sprint(total)}))
	}
	return reconcile.Failed(kustomizev1.PruneGuardedReason, errors.New(msg)).WithoutEvent()
}

// askingConfirmation names the objects of objs whose live metadata asks
// for a confirmation before the prune p deletes them
// (manage.ConfirmationAskedBy), each with the annotation that asks, as the
// watch cache has them: an object gone, or no longer ours, is not
// deleted, so it asks for nothing.
func (s *syncRun) askingConfirmation(ctx context.Context, objs []*unstructured.Unstructured, p manage.Pruning) ([]string, error) {
	var asking []string
	for _, o := range objs {
		live, err := s.target.Engine.LiveMetadata(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the watch cache: %w", object.IDOf(o), err)
		}
		if live == nil || !s.owner.Owns(live.Labels) {
			continue
		}
		if by := manage.ConfirmationAskedBy(live, p); by != "" {
			asking = append(asking, fmt.Sprintf("%s (%s)", object.IDOf(o), by))
		}
	}
	return asking, nil
}

// ConfirmPruneChanged passes updates that change the confirm-prune
// annotation, so a confirmation is acted on at once.
type ConfirmPruneChanged struct{ predicate.Funcs }

func (ConfirmPruneChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	return e.ObjectOld.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation] != e.ObjectNew.GetAnnotations()[kustomizev1.ConfirmPruneAnnotation]
}
