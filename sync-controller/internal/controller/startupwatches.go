package controller

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// startupWatchesTimeout bounds how long a restarted leader stays unready
// while the drift informers of its stored inventories list: a kind that
// cannot be listed (its CRD gone, the API server slow) must not keep the
// controller unready for good; the first reconcile that needs the kind
// starts its informer as before.
const startupWatchesTimeout = time.Minute

// startupWatches starts the drift informers of every kind the stored
// inventories of one owner kind name, before /readyz says ready.
//
// Without it, a restarted sync-controller starts each kind's informer with
// the first reconcile that applies the kind, and those start-up reconciles
// come from the initial list of the owners, which controller-runtime's
// priority queue takes at low priority after everything else. An informer
// reacts to updates, not to the objects of its initial list, so a foreign
// edit made between readiness and that reconcile was no watch event: it
// waited for the owner's turn in the start-up queue (1.65 s at 1,000
// Kustomizations, docs/bench/fleet.md "Restarts"). Started here, the
// informers have listed when the process says ready, and an edit after
// that is an update event queued at normal priority, ahead of the start-up
// reconciles.
//
// It costs a list and a watch per kind, read from the owners already in
// the manager's cache: nothing per Kustomization.
type startupWatches struct {
	// owners lists the owners from the manager's cache.
	owners func(ctx context.Context) ([]storedInventory, error)
	// waitCache waits for the manager's cache (the owners' informer).
	waitCache func(ctx context.Context) bool
	watcher   *engine.Watcher
	// elected is closed when this replica leads (at once without leader
	// election); a standby is ready without the watches, which it starts
	// once it leads.
	elected <-chan struct{}
	// standbyReady says whether a replica that does not lead yet reports
	// ready: with leader election, a standby; without, a process whose
	// manager has not started its controllers yet, which is not ready.
	standbyReady bool
	done         chan struct{}
	log          logr.Logger
}

// addStartupWatches registers the start-up watches of the owners that
// list (a KustomizationList or a HelmReleaseList) holds and their
// readiness check with mgr.
func addStartupWatches(mgr ctrl.Manager, r *Syncer, kind string, list client.ObjectList) error {
	s := &startupWatches{
		owners: func(ctx context.Context) ([]storedInventory, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			if err := mgr.GetClient().List(ctx, l); err != nil {
				return nil, err
			}
			return storedInventories(l)
		},
		waitCache:    mgr.GetCache().WaitForCacheSync,
		watcher:      r.Engine.Watcher(),
		elected:      mgr.Elected(),
		standbyReady: r.LeaderElection,
		done:         make(chan struct{}),
		log:          mgr.GetLogger().WithName("startup-watches"),
	}
	if err := mgr.Add(s); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("drift-watches-"+strings.ToLower(kind), s.ready)
}

// Start starts the informers and returns; it runs on the leader, with the
// controllers.
func (s *startupWatches) Start(ctx context.Context) error {
	defer close(s.done)
	ctx, cancel := context.WithTimeout(ctx, startupWatchesTimeout)
	defer cancel()
	if !s.waitCache(ctx) || !s.watcher.WaitStarted(ctx) {
		return nil
	}
	owners, err := s.owners(ctx)
	if err != nil {
		// Not fatal: the reconciles start the informers as they go.
		s.log.Error(err, "listing the stored inventories; drift watches start with each reconcile")
		return nil
	}
	kinds := inventoryKinds(owners)
	start := time.Now()
	for _, gvk := range kinds {
		if err := s.watcher.Watch(ctx, gvk); err != nil {
			s.log.Info("not watching a kind of the stored inventories before the first reconcile", "kind", gvk.String(), "error", err.Error())
		}
	}
	s.log.V(1).Info("drift watches started", "kinds", len(kinds), "owners", len(owners), "took", time.Since(start).String())
	return nil
}

// ready is the /readyz check: not ready while the leader starts its
// watches, nor before its controllers take watch events.
func (s *startupWatches) ready(_ *http.Request) error {
	select {
	case <-s.elected:
	default:
		if s.standbyReady {
			return nil
		}
		return errors.New("the controllers have not started")
	}
	select {
	case <-s.done:
	default:
		return errors.New("starting the drift watches of the stored inventories")
	}
	if !s.watcher.HasQueue() {
		return errors.New("the controller does not take watch events yet")
	}
	return nil
}

// inventoryKinds returns the distinct kinds the owners' inventories name,
// in a stable order. An owner that syncs another cluster (spec.kubeConfig)
// is left out: its objects are watched there, by a watcher its first
// reconcile starts.
func inventoryKinds(owners []storedInventory) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, o := range owners {
		if o.remote || o.inventory == nil {
			continue
		}
		for _, e := range o.inventory.Entries {
			gvk := schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
			if !seen[gvk] {
				seen[gvk] = true
				kinds = append(kinds, gvk)
			}
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	return kinds
}

// storedInventory is what the start-up watches read of an owner.
type storedInventory struct {
	inventory *kustomizev1.Inventory
	// remote: the owner syncs another cluster (spec.kubeConfig).
	remote bool
}

// storedInventories reads the owners of a list through their adapters
// (application.go), which say where each kind keeps its inventory and
// its spec.kubeConfig.
func storedInventories(l client.ObjectList) ([]storedInventory, error) {
	items, err := apimeta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]storedInventory, len(items))
	for i, item := range items {
		app := appOf(item.(reconcile.Object))
		out[i] = storedInventory{inventory: app.syncStatus().Inventory, remote: app.spec().KubeConfig != nil}
	}
	return out, nil
}
