package engine

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/health"
	"plumb.dev/pkg/object"
)

// The bounds of explaining a failed health wait by Pods: at most
// maxExplained workloads per failure, each one GET and two bounded Lists
// (pkg/health WithPods), all within podLookupTimeout, which runs after
// the wait's own deadline.
const (
	maxExplained     = 5
	podLookupTimeout = 10 * time.Second
)

// explainByPods adds what the newest Pods of an unhealthy Deployment,
// StatefulSet or DaemonSet say ("Pod web-7d9…-x2k container web is
// CrashLoopBackOff (last exit 3, Error, 5 restarts)") to the reports a
// failed wait returns. It runs only when a wait fails, never on a round of
// a wait that goes on: a fleet that rolls out pays nothing for it. It reads
// as the engine's identity; a lookup that identity may not make, or that
// fails, leaves the report as it was.
func (e *Engine) explainByPods(ctx context.Context, reports []HealthReport, kinds map[object.ID]*unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), podLookupTimeout)
	defer cancel()
	done := 0
	for i, r := range reports {
		like := kinds[r.ID]
		if like == nil || !health.HasPods(like) || done == maxExplained {
			continue
		}
		done++
		if detail := e.podDetail(ctx, r, like); detail != "" {
			reports[i].Message = joinDetail(r.Message, detail)
		}
	}
}

// podDetail reads the workload again (the wait kept only its health) and
// asks pkg/health what its newest Pods say.
func (e *Engine) podDetail(ctx context.Context, r HealthReport, like *unstructured.Unstructured) string {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(like.GroupVersionKind())
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: r.ID.Namespace, Name: r.ID.Name}, live); err != nil {
		return ""
	}
	return health.PodDetail(ctx, live, r.Result, health.ListerFor(e.client))
}

func joinDetail(msg, detail string) string {
	if msg == "" {
		return detail
	}
	return msg + "; " + detail
}

// HealthDegradedError is WaitHealthy's error when an object is Degraded.
// Its text adds what the object's Pods say, with figures that change from
// one attempt to the next (restarts); Summary leaves those out, for the
// event that reports it, as HealthTimeoutError's does.
type HealthDegradedError struct {
	// Report is the object as the health rules judged it; Pods what its
	// Pods say ("" when none was looked at or none has a problem).
	Report HealthReport
	Pods   string
}

func (e *HealthDegradedError) Error() string {
	return fmt.Sprintf("%s is Degraded: %s", e.Report.ID, joinDetail(e.Report.Message, e.Pods))
}

// Summary is "Deployment/apps/web is Degraded: <what its rule said>".
func (e *HealthDegradedError) Summary() string {
	return fmt.Sprintf("%s is Degraded: %s", e.Report.ID, e.Report.Message)
}

// degraded is the error of a wait that found id Degraded.
func (e *Engine) degraded(ctx context.Context, id object.ID, r health.Result, like *unstructured.Unstructured) error {
	err := &HealthDegradedError{Report: HealthReport{ID: id, Result: r}}
	if like != nil && health.HasPods(like) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), podLookupTimeout)
		defer cancel()
		err.Pods = e.podDetail(ctx, err.Report, like)
	}
	return err
}
