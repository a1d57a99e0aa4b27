package controller

import (
	"context"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/sync-controller/internal/fight"
)

// reportFights sets status.drift.contested and the DriftContested
// condition from the run's fights; internal/fight records their events.
func (s *syncRun) reportFights(ctx context.Context) {
	all := s.fights.Report(ctx, fight.Reporting{
		Events: s.r.Events, Object: s.obj, Revision: s.revision, IgnoreField: s.app.ignoreField(), Reader: s.r.reader(),
	})
	if len(all) == 0 {
		conditions.Delete(s.out, kustomizev1.DriftContestedCondition)
		if s.st.Drift != nil {
			s.st.Drift.Contested = nil
		}
		return
	}
	if s.st.Drift == nil {
		s.st.Drift = &kustomizev1.DriftStatus{}
	}
	s.st.Drift.Contested = all
	messages := make([]string, 0, len(all))
	for _, c := range all {
		messages = append(messages, fight.Message(c, s.app.ignoreField()))
	}
	conditions.MarkTrue(s.out, kustomizev1.DriftContestedCondition, kustomizev1.DriftContestedReason, "%s", strings.Join(messages, "; "))
}
