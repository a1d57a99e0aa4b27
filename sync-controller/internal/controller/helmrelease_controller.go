package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// HelmReleaseReconciler makes the cluster equal to a HelmRelease's
// rendered chart, with the same steps as a Kustomization's sync (syncRun),
// Helm's sync spec (the helmRelease adapter) and, on top, the release
// history and the Released condition (recordRelease).
type HelmReleaseReconciler struct {
	Syncer

	// sk is built once, by SetupWithManager.
	sk *reconcile.Controller[*helmv2.HelmRelease]
}

// SetupWithManager registers the reconciler: it runs on spec changes,
// reconcile requests, a new rendered artifact, a dependency becoming Ready,
// and foreign writes to managed objects (through the engine's watcher,
// which must be the HelmRelease one: engine.NewWatcherFor).
func (r *HelmReleaseReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.defaults()
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &helmv2.HelmRelease{}, dependsOnIndex, func(o client.Object) []string {
		return dependsOnKeys(o, o.(*helmv2.HelmRelease).Spec.DependsOn)
	}); err != nil {
		return err
	}
	if err := r.watchOwnWrites(ctx, mgr, &helmv2.HelmRelease{}); err != nil {
		return err
	}
	if err := addStartupWatches(mgr, &r.Syncer, helmv2.HelmReleaseKind, &helmv2.HelmReleaseList{}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&helmv2.HelmRelease{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, reconcile.RequestedPredicate{}, renderedChanged{}, ConfirmPruneChanged{}, rollbackChanged{}, forceDeleteRequested{}, syncRequested{}))).
		Watches(&helmv2.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(becameReady{})).
		Watches(&kustomizev1.SyncWindowPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.windowPolicySelects(ctx, o, &helmv2.HelmReleaseList{})
		})).
		WatchesRawSource(r.Engine.Watcher().Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// newSkeleton is this controller's use of pkg/reconcile: a failure is
// retried after spec.interval (a HelmRelease has no retryInterval).
func (r *HelmReleaseReconciler) newSkeleton() *reconcile.Controller[*helmv2.HelmRelease] {
	return newSkeleton(&r.Syncer, helmv2.HelmReleaseKind, func(hr *helmv2.HelmRelease) string {
		note := outOfSyncNote(hr.Status.ManualSyncStatus)
		if len(hr.Status.History) == 0 {
			return appliedMessage(hr.Status.LastAppliedRevision, hr.Status.ManualSyncStatus) + windowNote(hr.Status.SyncWindow, appOf(hr).spec())
		}
		h := hr.Status.History[0]
		return fmt.Sprintf("Released %s@%s as %s/%s v%d", h.ChartName, h.ChartVersion, h.Namespace, h.Name, h.Version) + note + rolledBackNote(hr) + windowNote(hr.Status.SyncWindow, appOf(hr).spec())
	})
}

// Reconcile runs one sync of a HelmRelease (syncRun.steps), records the
// release it made (recordRelease) and writes sync-controller's part of its
// status.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileObject(ctx, &r.Syncer, req, &helmv2.HelmRelease{}, r.sk, recordRelease)
}

// dependents maps a HelmRelease to the ones that depend on it.
func (r *HelmReleaseReconciler) dependents(ctx context.Context, o client.Object) []ctrl.Request {
	return r.dependentsOf(ctx, o, &helmv2.HelmReleaseList{})
}

// recordRelease records the sync operation a run made, if it made one (a
// resync of a release that succeeded is none), as a release: in
// status.history and the Released condition, and with an event when it
// succeeded (its failure has the run's own). A sync of a new render is a
// new release — version one more than the newest — the retry of a failed
// one updates it. A release that succeeded is deployed and every older
// deployed one superseded; one that failed is failed, and the deployed one
// before it stays deployed (what runs is still mostly its objects).
func recordRelease(ctx context.Context, s *syncRun) {
	hr, ok := s.out.(*helmv2.HelmRelease)
	if !ok || !s.op.made {
		return
	}
	if s.rel != nil && s.rel.action == rollbackRelease {
		recordRollback(s, hr)
		s.writeHelmRecord(ctx, hr)
		return
	}
	now := metav1.Now()
	md := map[string]string{}
	if a := s.app.rendered(); a != nil && a.Metadata != nil {
		md = a.Metadata
	}
	history := hr.Status.History
	if len(history) == 0 || history[0].Digest != s.digest {
		// firstDeployed is the install's time on every release, as Helm
		// carries it from release to release.
		version, started := 1, s.operationStart()
		if len(history) > 0 {
			version, started = history[0].Version+1, history[0].FirstDeployed
		}
		version = s.continueHelmVersion(ctx, hr, version)
		history = append([]helmv2.Snapshot{{
			Version: version, Name: hr.GetReleaseName(), Namespace: hr.GetReleaseNamespace(),
			ChartName: md[helmv2.ArtifactChartNameKey], ChartVersion: s.revision,
			ConfigDigest: md[helmv2.ArtifactConfigDigestKey], Digest: s.digest,
			OCIDigest: md[helmv2.ArtifactOCIDigestKey], FirstDeployed: started,
		}}, history...)
	} else {
		history = append([]helmv2.Snapshot(nil), history...)
	}
	if v := md[helmv2.ArtifactChartVersionKey]; v != "" {
		history[0].ChartVersion = v
	}
	history[0].LastDeployed = now
	action := "upgrade"
	succeeded, failed := helmv2.UpgradeSucceededReason, helmv2.UpgradeFailedReason
	if s.install {
		action = "install"
		succeeded, failed = helmv2.InstallSucceededReason, helmv2.InstallFailedReason
	}
	h := &history[0]
	release := fmt.Sprintf("%s of %s@%s (release %s/%s v%d)", action, h.ChartName, h.ChartVersion, h.Namespace, h.Name, h.Version)
	if s.op.synced {
		h.Status = helmv2.ReleaseStatusDeployed
		for i := 1; i < len(history); i++ {
			if history[i].Status == helmv2.ReleaseStatusDeployed {
				history[i].Status = helmv2.ReleaseStatusSuperseded
			}
		}
		h.Description = describeRelease(action, h.Name, nil)
		conditions.MarkTrue(s.out, helmv2.ReleasedCondition, succeeded, "%s succeeded", release)
		s.r.Events.Record(s.obj, events.SeverityInfo, succeeded, release+" succeeded", events.WithRevision(s.revision))
	} else {
		h.Status = helmv2.ReleaseStatusFailed
		msg := "the sync did not complete"
		if s.op.err != nil {
			msg = s.op.err.Error()
		}
		h.Description = describeRelease(action, h.Name, errors.New(msg))
		conditions.MarkFalse(s.out, helmv2.ReleasedCondition, failed, "%s failed: %s", release, msg)
	}
	hr.Status.History = trimHistory(history)
	countAttempt(s, hr, action)
	s.writeHelmRecord(ctx, hr)
}

// trimHistory keeps helmv2.MaxHistory releases, newest first, dropping the
// oldest ones — but never the newest deployed release, which says that
// the HelmRelease is installed (application.install) however many failed
// upgrades followed it.
func trimHistory(history []helmv2.Snapshot) []helmv2.Snapshot {
	return boundHistory(history, helmv2.MaxHistory, func(s helmv2.Snapshot) bool {
		return s.Status == helmv2.ReleaseStatusDeployed
	})
}
