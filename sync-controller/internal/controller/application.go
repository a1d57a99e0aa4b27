package controller

import (
	"context"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/reconcile"
)

// application is what a sync reads and writes of the object it syncs, a
// Kustomization or a HelmRelease: the steps of syncRun are the same for
// both, and these thin adapters (kustomization, helmRelease) are where the
// kinds differ.
type application interface {
	// object is the Kustomization or HelmRelease itself: events are
	// recorded on it, conditions set on it, and the skeleton runs on it.
	object() reconcile.Object
	// owner names the object as the owner of what it applies.
	owner() manage.Owner
	// spec is what the sync reads of the spec.
	spec() syncSpec
	// rendered is status.renderedArtifact (render-controller's).
	rendered() *meta.Artifact
	// syncStatus returns sync-controller's status fields both kinds share;
	// setSyncStatus writes them back.
	syncStatus() syncStatus
	setSyncStatus(syncStatus)
	// lastHandledReconcileAt is status.lastHandledReconcileAt.
	lastHandledReconcileAt() string
	// ownStatus is a copy of sync-controller's part of the status, the
	// inventory left out (it has a field manager of its own), conditions
	// in type order so that order alone is no change.
	ownStatus() any
	// install says that nothing was applied successfully yet (pkg/plan's
	// Options.Install: Helm's install hooks run, not its upgrade hooks).
	install() bool
	// newEmpty returns an empty object of the same kind, to read a
	// dependency into.
	newEmpty() application
	// attempted records, beside lastAttemptedRevision, what the kind keeps
	// of the artifact a sync attempts.
	attempted(*meta.Artifact)
	// defaultNamespace is given to the namespaced objects that name none.
	defaultNamespace() string
	// ignoreField and desiredState name the ignore rules and the desired
	// state in messages.
	ignoreField() string
	desiredState() string
	// redactor hides, in drift reports, the values that came from Secrets;
	// nil when none did.
	redactor(context.Context, client.Reader) (*diff.Redactor, error)
	// manualSync is the status of manual syncs (manualsync.go), in place.
	manualSync() *kustomizev1.ManualSyncStatus
}

// syncSpec is what a sync reads of a spec. Each kind fills in what it
// does not have (see the adapters).
type syncSpec struct {
	Interval, RetryInterval, Timeout time.Duration
	Suspend                          bool
	// Prune deletes what left the render; Guarded holds a render that
	// would prune too much of the inventory until it is confirmed
	// (pruneguard.go). GuardFields says that the kind has the fields
	// AllowEmpty and MaxPrunePercent come from (a Kustomization); a
	// HelmRelease has neither, so only the confirmation and
	// sync-controller's flags apply to it.
	Prune, Guarded, GuardFields, AllowEmpty bool
	MaxPrunePercent                         *int32
	// DeleteOnDeletion deletes the inventory, and runs the delete hooks,
	// when the object is deleted (a Kustomization's spec.deletionPolicy;
	// a HelmRelease always, as helm uninstall). WaitForTermination then
	// holds the finalizer until the deleted objects are gone, at most
	// Timeout from the deletion.
	DeleteOnDeletion, WaitForTermination bool
	// DeleteHooksDisabled runs no delete hook (a HelmRelease's
	// uninstall.disableHooks); DeletionPropagation is how the deleted
	// objects' dependents go (uninstall.deletionPropagation; empty is
	// background). TerminationRule names, in messages, the setting that
	// waits for termination and TimeoutField the one that bounds it; empty
	// are a Kustomization's.
	DeleteHooksDisabled bool
	DeletionPropagation metav1.DeletionPropagation
	// PrunePropagation is how a sync's prune deletes (a Kustomization's
	// spec.prunePropagationPolicy; empty is background).
	PrunePropagation metav1.DeletionPropagation
	// FailOnSharedResource refuses a sync whose render has objects
	// another owner manages (shared.go; a Kustomization's field).
	FailOnSharedResource          bool
	TerminationRule, TimeoutField string
	// Wait waits for every applied object to be healthy.
	Wait  bool
	Force bool
	// ServiceAccountName is impersonated for every request to managed
	// objects.
	ServiceAccountName string
	// KubeConfig names the remote cluster the sync acts in (internal/target);
	// nil is sync-controller's own cluster.
	KubeConfig *kustomizev1.KubeConfigReference
	// DependsOn names objects of the same kind that must be ready first.
	DependsOn    []meta.DependencyReference
	HealthChecks []kustomizev1.NamespacedObjectKindReference
	// HealthCheckExprs judge the health of the kinds they name.
	HealthCheckExprs []kustomizev1.CustomHealthCheck
	// DriftPolicy corrects or reports drift; with DriftDisabled neither:
	// a sync that already succeeded applies nothing until the render or
	// the spec changes.
	DriftPolicy   kustomizev1.DriftPolicy
	DriftDisabled bool
	Ignore        []kustomizev1.IgnoreRule
	// Retry is a Kustomization's spec.retry (retry.go); a HelmRelease has
	// none.
	Retry *kustomizev1.RetryStrategy
	// Manual is spec.syncPolicy Manual: a render is applied only when a
	// sync is asked for (manualsync.go).
	Manual bool
	// The switches of a HelmRelease's install or upgrade (actionswitches.go);
	// a Kustomization has none.
	Switches actionSwitches
}

// syncStatus is sync-controller's part of the status that both kinds
// share, with the same types.
type syncStatus struct {
	LastAppliedRevision, LastAttemptedRevision string
	Inventory                                  *kustomizev1.Inventory
	Drift                                      *kustomizev1.DriftStatus
	Sync                                       *kustomizev1.SyncProgress
	// Retry is a Kustomization's status.retry; a HelmRelease has none.
	Retry *kustomizev1.RetryStatus
}

// terminationWait names the setting that waits for the deleted objects
// and the one that bounds the wait, for messages.
func (s syncSpec) terminationWait() (rule, timeout string) {
	rule, timeout = s.TerminationRule, s.TimeoutField
	if rule == "" {
		rule = "deletionPolicy " + string(kustomizev1.DeletionPolicyWaitForTermination)
	}
	if timeout == "" {
		timeout = "spec.timeout"
	}
	return rule, timeout
}

// sortedOwnConditions returns the conditions other than render-controller's
// Rendered, in type order.
func sortedOwnConditions(in []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range in {
		if c.Type != kustomizev1.RenderedCondition {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// kustomization adapts a Kustomization.
type kustomization struct{ *kustomizev1.Kustomization }

func (k kustomization) object() reconcile.Object { return k.Kustomization }

func (k kustomization) owner() manage.Owner {
	return manage.Owner{Kind: kustomizev1.KustomizationKind, Namespace: k.Namespace, Name: k.Name}
}

func (k kustomization) spec() syncSpec {
	s := &k.Spec
	return syncSpec{
		Interval: s.Interval.Duration, RetryInterval: k.GetRetryInterval(), Timeout: k.GetTimeout().Duration,
		Suspend: s.Suspend,
		Prune:   s.Prune, Guarded: true, GuardFields: true, AllowEmpty: s.AllowEmpty, MaxPrunePercent: s.MaxPrunePercent,
		DeleteOnDeletion:   k.DeletesOnDeletion(),
		WaitForTermination: k.GetDeletionPolicy() == kustomizev1.DeletionPolicyWaitForTermination,
		Wait:               s.Wait, Force: s.Force,
		ServiceAccountName: s.ServiceAccountName, KubeConfig: s.KubeConfig,
		DependsOn: s.DependsOn, HealthChecks: s.HealthChecks, HealthCheckExprs: s.HealthCheckExprs,
		DriftPolicy: k.GetDriftPolicy(), Ignore: s.Ignore,
		Retry:                s.Retry,
		PrunePropagation:     metav1.DeletionPropagation(propagationOf(string(s.PrunePropagationPolicy))),
		DeletionPropagation:  metav1.DeletionPropagation(propagationOf(string(s.PrunePropagationPolicy))),
		FailOnSharedResource: s.FailOnSharedResource,
		Manual:               k.GetSyncPolicy() == kustomizev1.SyncPolicyManual,
	}
}

func (k kustomization) rendered() *meta.Artifact { return k.Status.RenderedArtifact }

func (k kustomization) syncStatus() syncStatus {
	st := &k.Status
	return syncStatus{LastAppliedRevision: st.LastAppliedRevision, LastAttemptedRevision: st.LastAttemptedRevision,
		Inventory: st.Inventory, Drift: st.Drift, Sync: st.Sync, Retry: st.Retry}
}

func (k kustomization) setSyncStatus(s syncStatus) {
	st := &k.Status
	st.LastAppliedRevision, st.LastAttemptedRevision = s.LastAppliedRevision, s.LastAttemptedRevision
	st.Inventory, st.Drift, st.Sync, st.Retry = s.Inventory, s.Drift, s.Sync, s.Retry
}

func (k kustomization) lastHandledReconcileAt() string { return k.Status.LastHandledReconcileAt }

func (k kustomization) ownStatus() any {
	own := k.Status.DeepCopy()
	own.RenderedArtifact, own.Inventory = nil, nil
	own.Conditions = sortedOwnConditions(k.Status.Conditions)
	return own
}

// install: a Kustomization rendered from `helm template` output installs
// until a revision was applied successfully.
func (k kustomization) install() bool { return k.Status.LastAppliedRevision == "" }

func (k kustomization) newEmpty() application {
	return kustomization{&kustomizev1.Kustomization{}}
}

func (k kustomization) attempted(*meta.Artifact) {}

func (k kustomization) defaultNamespace() string { return k.Namespace }

func (k kustomization) ignoreField() string { return "spec.ignore" }

func (k kustomization) desiredState() string { return "Git" }

func (k kustomization) manualSync() *kustomizev1.ManualSyncStatus { return &k.Status.ManualSyncStatus }

// redactor: the values postBuild.substituteFrom took from Secrets
// (drift.SecretRedactor).
func (k kustomization) redactor(ctx context.Context, r client.Reader) (*diff.Redactor, error) {
	return drift.SecretRedactor(ctx, r, k.Kustomization)
}

// helmRelease adapts a HelmRelease. Its sync spec is Helm's: prune always
// (Helm deletes what left the chart), wait always for every applied object,
// bounded by spec.timeout and judged by healthCheckExprs where they name
// the kind, no healthChecks, no force, drift from driftDetection, and the
// cluster of kubeConfig as a Kustomization's. Helm has no prune guard, but Plumb guards a release as a
// Kustomization, with sync-controller's thresholds (the kind has no
// allowEmpty or maxPrunePercent): a broken chart version that renders
// nothing, or a release name changed by mistake, would otherwise delete
// the whole release at once.
type helmRelease struct{ *helmv2.HelmRelease }

func (h helmRelease) object() reconcile.Object { return h.HelmRelease }

func (h helmRelease) owner() manage.Owner {
	return manage.Owner{Kind: helmv2.HelmReleaseKind, Namespace: h.Namespace, Name: h.Name}
}

func (h helmRelease) spec() syncSpec {
	s := &h.Spec
	out := syncSpec{
		// A HelmRelease has no retryInterval: a failure is retried after
		// the interval, as Flux's helm-controller does, or after the
		// action's strategy.retryInterval under RetryOnFailure.
		Interval: s.Interval.Duration, RetryInterval: h.retryInterval(), Timeout: h.GetTimeout().Duration,
		Suspend: s.Suspend,
		Prune:   true, Guarded: true, Wait: true, DeleteOnDeletion: true,
		ServiceAccountName: s.ServiceAccountName, KubeConfig: s.KubeConfig,
		DependsOn:        s.DependsOn,
		HealthCheckExprs: s.HealthCheckExprs,
		DriftPolicy:      kustomizev1.DriftPolicyCorrect,
		Manual:           h.GetSyncPolicy() == kustomizev1.SyncPolicyManual,
	}
	h.applySwitches(&out)
	if !h.DeletionTimestamp.IsZero() {
		// The deletion is Helm's uninstall, with spec.uninstall's options
		// (Flux waits for the deleted objects unless disableWait).
		u := s.Uninstall
		if u == nil {
			u = &helmv2.Uninstall{}
		}
		out.WaitForTermination = !u.DisableWait
		out.DeleteHooksDisabled = u.DisableHooks
		out.DeletionPropagation = metav1.DeletionPropagation(propagationOf(u.DeletionPropagation))
		out.TerminationRule, out.TimeoutField = "uninstall", "spec.timeout"
		if u.Timeout != nil {
			out.Timeout, out.TimeoutField = u.Timeout.Duration, "uninstall.timeout"
		}
	}
	switch h.GetDriftDetectionMode() {
	case helmv2.DriftDetectionWarn:
		out.DriftPolicy = kustomizev1.DriftPolicyReport
	case helmv2.DriftDetectionDisabled:
		out.DriftDisabled = true
	}
	if s.DriftDetection != nil {
		out.Ignore = s.DriftDetection.Ignore
	}
	return out
}

// retryInterval is when a failed sync is tried again: strategy.retryInterval
// of the action the next sync makes (install or upgrade) under
// RetryOnFailure, else spec.interval.
func (h helmRelease) retryInterval() time.Duration {
	if h.install() && h.GetInstallStrategy() == helmv2.RetryOnFailure {
		return h.Spec.Install.Strategy.GetRetryInterval()
	}
	if !h.install() && h.GetUpgradeStrategy() == helmv2.RetryOnFailure {
		return h.Spec.Upgrade.Strategy.GetRetryInterval()
	}
	return h.Spec.Interval.Duration
}

// propagationOf maps uninstall.deletionPropagation (Helm's lower-case
// names) onto the API's policy; empty stays empty (background).
func propagationOf(p string) string {
	switch p {
	case "foreground":
		return string(metav1.DeletePropagationForeground)
	case "orphan":
		return string(metav1.DeletePropagationOrphan)
	case "background":
		return string(metav1.DeletePropagationBackground)
	}
	return ""
}

func (h helmRelease) rendered() *meta.Artifact { return h.Status.RenderedArtifact }

func (h helmRelease) syncStatus() syncStatus {
	st := &h.Status
	return syncStatus{LastAppliedRevision: st.LastAppliedRevision, LastAttemptedRevision: st.LastAttemptedRevision,
		Inventory: st.Inventory, Drift: st.Drift, Sync: st.Sync}
}

func (h helmRelease) setSyncStatus(s syncStatus) {
	st := &h.Status
	st.LastAppliedRevision, st.LastAttemptedRevision = s.LastAppliedRevision, s.LastAttemptedRevision
	st.Inventory, st.Drift, st.Sync = s.Inventory, s.Drift, s.Sync
}

func (h helmRelease) lastHandledReconcileAt() string { return h.Status.LastHandledReconcileAt }

func (h helmRelease) ownStatus() any {
	own := h.Status.DeepCopy()
	own.RenderedArtifact, own.HelmChart, own.Inventory = nil, "", nil
	own.Conditions = sortedOwnConditions(h.Status.Conditions)
	return own
}

// install: a HelmRelease installs while no release of its history was
// deployed.
func (h helmRelease) install() bool {
	for _, s := range h.Status.History {
		if s.Status == helmv2.ReleaseStatusDeployed || s.Status == helmv2.ReleaseStatusSuperseded {
			return false
		}
	}
	return true
}

func (h helmRelease) newEmpty() application { return helmRelease{&helmv2.HelmRelease{}} }

// attempted: lastAttemptedConfigDigest and lastAttemptedRevisionDigest
// (the chart's OCI digest, empty for a HelmChart's), from the artifact's
// metadata.
func (h helmRelease) attempted(a *meta.Artifact) {
	h.Status.LastAttemptedConfigDigest = a.Metadata[helmv2.ArtifactConfigDigestKey]
	h.Status.LastAttemptedRevisionDigest = a.Metadata[helmv2.ArtifactOCIDigestKey]
}

// defaultNamespace: the release namespace (targetNamespace, else the
// HelmRelease's), as Helm installs into it.
func (h helmRelease) defaultNamespace() string { return h.GetReleaseNamespace() }

func (h helmRelease) ignoreField() string { return "spec.driftDetection.ignore" }

func (h helmRelease) desiredState() string { return "the chart" }

func (h helmRelease) manualSync() *kustomizev1.ManualSyncStatus { return &h.Status.ManualSyncStatus }

// redactor: values from Secrets (valuesFrom) go through the chart's
// templates, which may encode, quote or split them, so every drifted value
// is hidden when the release takes any.
func (h helmRelease) redactor(context.Context, client.Reader) (*diff.Redactor, error) {
	for _, ref := range h.Spec.ValuesFrom {
		if ref.Kind == "Secret" {
			return diff.RedactAll(), nil
		}
	}
	return nil, nil
}

// appOf adapts a Kustomization or a HelmRelease.
func appOf(obj reconcile.Object) application {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return kustomization{o}
	case *helmv2.HelmRelease:
		return helmRelease{o}
	}
	panic("sync-controller syncs no " + obj.GetObjectKind().GroupVersionKind().Kind)
}
