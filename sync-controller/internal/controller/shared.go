package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/reconcile"
)

// refuseShared, with a Kustomization's spec.failOnSharedResource, fails a
// sync before anything is applied when objects of its render are managed
// by another Kustomization or HelmRelease (their ownership labels name
// it), as Argo CD's FailOnSharedResource fails a sync. Without the field
// such an object is taken over by the apply, as before. Hooks are not
// looked at: they belong to no inventory. Records one SharedResource
// event per distinct message, not one per retry.
func (s *syncRun) refuseShared(ctx context.Context) error {
	if !s.spec.FailOnSharedResource {
		return nil
	}
	shared, err := s.target.Engine.SharedWith(ctx, s.inventoryObjects(), s.owner)
	if err != nil {
		return err
	}
	if len(shared) == 0 {
		return nil
	}
	names := make([]string, len(shared))
	for i, o := range shared {
		names[i] = o.String()
	}
	msg := fmt.Sprintf("spec.failOnSharedResource: revision %s has %d object(s) that another owner manages: %s. Nothing was applied",
		s.revision, len(shared), strings.Join(message.Names(names, 10), ", "))
	if prev := conditions.Get(s.obj, meta.ReadyCondition); prev == nil || prev.Status != metav1.ConditionFalse ||
		prev.Reason != kustomizev1.SharedResourceReason || prev.Message != msg {
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.SharedResourceReason, msg, events.WithRevision(s.revision))
	}
	return reconcile.Failed(kustomizev1.SharedResourceReason, errors.New(msg)).WithoutEvent()
}
