package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// cleanupOnFail deletes, after a failed upgrade with
// upgrade.cleanupOnFail (Helm's --cleanup-on-fail), the regular objects
// this sync created that the inventory before it did not have, in prune
// order and under the prune's rules (an object annotated to be kept
// stays), and takes them out of the inventory; what existed before the
// upgrade is left as it is. A failed delete keeps the object in the
// inventory (the next successful sync prunes it) and is recorded as
// PruneFailed. The failure of the upgrade is what the run reports.
func (s *syncRun) cleanupOnFail(ctx context.Context) {
	before := map[object.ID]bool{}
	for _, o := range inventory.Objects(s.prev.Inventory) {
		before[object.IDOf(o)] = true
	}
	var created []*unstructured.Unstructured
	for _, o := range s.tally.created {
		if id := object.IDOf(o); !before[id] && !plan.IsHook(o) {
			created = append(created, o)
		}
	}
	if len(created) == 0 {
		return
	}
	deleted := map[object.ID]bool{}
	var names []string
	for _, res := range s.target.Engine.Prune(ctx, plan.Flatten(plan.PruneOrder(created)), s.owner, manage.LeftTheSet) {
		switch {
		case res.Err != nil:
			log.FromContext(ctx).Error(res.Err, "cleanupOnFail: deleting an object the failed upgrade created", "object", res.ID.String())
			s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.PruneFailedReason,
				fmt.Sprintf("cleanupOnFail: %v", res.Err), events.WithRevision(s.revision))
		case res.Deleted:
			deleted[res.ID] = true
			names = append(names, res.ID.String())
		}
	}
	if len(names) == 0 {
		return
	}
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.PrunedReason,
		fmt.Sprintf("cleanupOnFail: deleted %d object(s) the failed upgrade created: %s", len(names), strings.Join(message.Names(names, 10), ", ")),
		events.WithRevision(s.revision))
	var kept []*unstructured.Unstructured
	for _, o := range inventory.Objects(s.st.Inventory) {
		if !deleted[object.IDOf(o)] {
			kept = append(kept, o)
		}
	}
	s.st.Inventory = inventory.New(kept)
}
