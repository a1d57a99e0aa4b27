package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/request"
)

// pollInterval is the pause before a wait watches again after its watch
// ended.
const pollInterval = 250 * time.Millisecond

// Aliases that keep the watch code short.
type watchEvent = watch.Event

const (
	watchAdded    = watch.Added
	watchModified = watch.Modified
	watchDeleted  = watch.Deleted
)

func newReconcileCmd(g *globals) *cobra.Command {
	var withSource bool
	c := &cobra.Command{
		Use:   "reconcile source [git|helm|chart|oci|bucket]|kustomization|helmrelease|receiver|alert|alert-provider|image [repository|policy|update] NAME",
		Short: "Ask for an immediate reconcile and wait for its result",
		Long: "reconcile sets the reconcile.plumb.dev/requestedAt annotation to a new token and\n" +
			"waits until the controller has handled it (status.lastHandledReconcileAt) and the\n" +
			"Ready condition has settled, printing progress on the way, then prints the\n" +
			"revision. With --with-source, a Kustomization's GitRepository or OCIRepository is reconciled\n" +
			"first; a HelmRelease's HelmChart source (HelmRepository or GitRepository), then\n" +
			"the HelmChart. A Receiver, an Alert or a Provider (alert-provider) is checked again by\n" +
			"notification-controller: its Secret read again, its Provider's readiness looked at.\n" +
			"An image repository is scanned (the tag count is printed), an image policy picks\n" +
			"again (the latest image), an image update runs (the commit it pushed, if any).\n" +
			"Exit code 1 when the reconcile ends with Ready=False.",
		Example: "  plumb reconcile kustomization app --with-source\n  plumb reconcile source git podinfo -n team-a\n" +
			"  plumb reconcile helmrelease podinfo --with-source\n  plumb reconcile source helm podinfo\n  plumb reconcile source chart team-a-podinfo\n" +
			"  plumb reconcile receiver github\n  plumb reconcile alert-provider slack\n" +
			"  plumb reconcile image repository podinfo\n  plumb reconcile image update flux-system",
		Args:              cobra.ArbitraryArgs, // kindAndName checks them
		ValidArgsFunction: g.completeKindAndName(reconcilableKinds()),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := kindAndName(args, reconcilableKinds()...)
			if err != nil {
				return err
			}
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			key := types.NamespacedName{Namespace: g.ns, Name: name}
			if withSource && k == helmReleaseKind {
				if err := g.reconcileChart(ctx, key); err != nil {
					return err
				}
			} else if withSource {
				if k != kustomizationKind {
					return errors.New("--with-source applies to a Kustomization or a HelmRelease")
				}
				ks := &kustomizev1.Kustomization{}
				if err := g.client.Get(ctx, key, ks); err != nil {
					return notFound(err, k, key)
				}
				srcKey := types.NamespacedName{Namespace: ks.Spec.SourceRef.Namespace, Name: ks.Spec.SourceRef.Name}
				if srcKey.Namespace == "" {
					srcKey.Namespace = ks.Namespace
				}
				// An ExternalArtifact is its producer's to refresh.
				if srcKind := kustomizationSourceKind(ks); srcKind != nil {
					if err := g.reconcile(ctx, srcKind, srcKey); err != nil {
						return err
					}
					src := srcKind.newObj()
					if err := g.client.Get(ctx, srcKey, src); err != nil {
						return notFound(err, srcKind, srcKey)
					}
					if rev := srcKind.status(src).revision; rev != "" {
						before := apimeta.FindStatusCondition(ks.Status.Conditions, kustomizev1.RenderedCondition)
						if err := g.waitRendered(ctx, kustomizationKind, key, rev, before); err != nil {
							return err
						}
					}
				}
			}
			return g.reconcile(ctx, k, key)
		},
	}
	c.Flags().BoolVar(&withSource, "with-source", false, "Reconcile the Kustomization's source (the HelmRelease's chart and its source) first.")
	return c
}

// reconcilableKinds are the kinds that honour a reconcile request (all
// but an ExternalArtifact, which its producer writes).
func reconcilableKinds() []*kind { return kindsWhere(func(k *kind) bool { return k.reconcilable }) }

// suspendableKinds are the kinds with spec.suspend.
func suspendableKinds() []*kind { return kindsWhere(func(k *kind) bool { return k.suspendable }) }

// kustomizationSourceKind is the kind of a Kustomization's source that
// plumb can reconcile (one that honours requestedAt), nil for an
// ExternalArtifact, which another program writes, or an unknown kind.
func kustomizationSourceKind(ks *kustomizev1.Kustomization) *kind {
	if k := kindOfRef(ks.Spec.SourceRef.Kind); k != nil && k.def.Source && k.reconcilable {
		return k
	}
	return nil
}

// reconcileChart reconciles a HelmRelease's chart as Flux's
// `reconcile hr --with-source` does: the HelmChart's source, then the
// HelmChart, then waits for render-controller to render the chart version
// fetched, so the sync requested next releases it.
func (g *globals) reconcileChart(ctx context.Context, key types.NamespacedName) error {
	hr := &helmv2.HelmRelease{}
	if err := g.client.Get(ctx, key, hr); err != nil {
		return notFound(err, helmReleaseKind, key)
	}
	chartKey := inspect.HelmChartKey(hr)
	if hr.GetChartSourceKind() != sourcev1.HelmChartKind {
		return g.reconcileArtifactChart(ctx, hr, chartKey)
	}
	chart := &sourcev1.HelmChart{}
	if err := g.client.Get(ctx, chartKey, chart); err != nil {
		if apierrors.IsNotFound(err) && hr.Spec.Chart != nil {
			return fmt.Errorf("HelmChart %s not found in namespace %s: render-controller creates it for spec.chart; is it running?", chartKey.Name, chartKey.Namespace)
		}
		return notFound(err, helmChartKind, chartKey)
	}
	srcKind, srcKey := chartSourceKey(chart)
	if err := g.reconcile(ctx, srcKind, srcKey); err != nil {
		return err
	}
	if err := g.reconcile(ctx, helmChartKind, chartKey); err != nil {
		return err
	}
	if err := g.client.Get(ctx, chartKey, chart); err != nil {
		return notFound(err, helmChartKind, chartKey)
	}
	if chart.Status.Artifact == nil {
		return nil
	}
	before := apimeta.FindStatusCondition(hr.Status.Conditions, kustomizev1.RenderedCondition)
	return g.waitRendered(ctx, helmReleaseKind, key, chart.Status.Artifact.Revision, before)
}

// reconcileArtifactChart is reconcileChart for a chartRef to an
// OCIRepository, whose artifact is the chart: it reconciles the
// OCIRepository and returns; render-controller renders its new artifact
// when it sees it (it watches the OCIRepository). The render's revision
// (the chart version with the artifact's digest) is not known before it
// is made, so it is not waited for. An ExternalArtifact is its producer's
// to update: nothing is requested of it.
func (g *globals) reconcileArtifactChart(ctx context.Context, hr *helmv2.HelmRelease, key types.NamespacedName) error {
	if hr.GetChartSourceKind() != sourcev1.OCIRepositoryKind {
		return nil
	}
	return g.reconcile(ctx, ociRepositoryKind, key)
}

// reconcile requests a reconcile of one object and waits for it.
func (g *globals) reconcile(ctx context.Context, k *kind, key types.NamespacedName) error {
	obj := k.newObj()
	if err := g.client.Get(ctx, key, obj); err != nil {
		return notFound(err, k, key)
	}
	if k.status(obj).suspended {
		return fmt.Errorf("%s is suspended: resume it first (plumb resume %s %s)", ref(k, obj), k.names[0], key.Name)
	}
	token, err := g.requestReconcile(ctx, obj, nil, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.out, "► reconcile of %s requested\n", ref(k, obj))
	return g.waitHandled(ctx, k, key, token)
}

// requestReconcile asks for a reconcile of obj (pkg/reconcile.Request),
// with further spec fields and annotations in the same patch, and returns
// the token the controller reports once it has handled it.
func (g *globals) requestReconcile(ctx context.Context, obj client.Object, spec map[string]any, annotations map[string]string) (string, error) {
	return request.Reconcile(ctx, g.client, obj, spec, annotations)
}

// waitHandled watches the object until the controller has handled token
// and Ready has settled, printing each new progress line. It returns nil
// for Ready=True and a negative result for Ready=False. A watch sees every
// status write, so no progress step is missed between two reads.
func (g *globals) waitHandled(ctx context.Context, k *kind, key types.NamespacedName, token string) error {
	w := &waiter{g: g, k: k, token: token}
	for {
		obj := k.newObj()
		if err := g.client.Get(ctx, key, obj); err != nil {
			return notFound(err, k, key)
		}
		if done, err := w.observe(obj); done {
			return err
		}
		list := k.newList()
		watch, err := g.client.Watch(ctx, list, client.InNamespace(key.Namespace),
			client.MatchingFields{"metadata.name": key.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}})
		if err != nil {
			if ctx.Err() != nil {
				return w.timeout(obj)
			}
			return fmt.Errorf("watching %s: %w", ref(k, obj), err)
		}
		done, err := w.consume(ctx, watch.ResultChan())
		watch.Stop()
		if done {
			return err
		}
		if ctx.Err() != nil {
			return w.timeout(w.last)
		}
		// The watch ended (a server timeout or a too-old version): read the
		// object again and watch from there.
		select {
		case <-ctx.Done():
			return w.timeout(w.last)
		case <-time.After(pollInterval):
		}
	}
}

// waiter follows one object through a requested reconcile.
type waiter struct {
	g        *globals
	k        *kind
	token    string
	lastLine string
	last     client.Object
}

// consume reads watch events until the reconcile settles, the channel
// closes (done false) or ctx ends.
func (w *waiter) consume(ctx context.Context, events <-chan watchEvent) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return true, w.timeout(w.last)
		case ev, ok := <-events:
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watchDeleted:
				return true, fmt.Errorf("%s was deleted while waiting for its reconcile", ref(w.k, w.last))
			case watchAdded, watchModified:
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				if done, err := w.observe(obj); done {
					return true, err
				}
			}
		}
	}
}

// observe prints progress for one state of the object and says whether
// the reconcile has settled, with the command's outcome.
func (w *waiter) observe(obj client.Object) (bool, error) {
	w.last = obj
	s := w.k.status(obj)
	if line := progress(obj, s, w.token); line != "" && line != w.lastLine {
		fmt.Fprintf(w.g.out, "◎ %s\n", line)
		w.lastLine = line
	}
	done, ready := settled(obj, s, w.token)
	if !done {
		return false, nil
	}
	if !ready {
		return true, negative(fmt.Errorf("%s is not ready: %s", ref(w.k, obj), s.condition(meta.ReadyCondition).Message))
	}
	switch {
	case w.k.report != nil:
		fmt.Fprintf(w.g.out, "✔ %s reconciled, %s\n", ref(w.k, obj), w.k.report(obj))
	case s.revision != "":
		fmt.Fprintf(w.g.out, "✔ %s reconciled, revision %s\n", ref(w.k, obj), s.revision)
	default:
		fmt.Fprintf(w.g.out, "✔ %s reconciled\n", ref(w.k, obj))
	}
	return true, nil
}

func (w *waiter) timeout(obj client.Object) error {
	ready, msg := readyOf(w.k.status(obj))
	return fmt.Errorf("timed out waiting for %s to reconcile (Ready=%s: %s); is the controller running?", ref(w.k, obj), ready, oneLine(msg))
}

// settled reports whether the reconcile asked for with token is over, and
// whether it left the object Ready: the token is handled, the status is
// for the current generation, and Ready is True or False. Ready=False with
// Reconciling=True (a retry, or a dependency not ready yet) is this
// request's answer too; Ready=Unknown is not.
func settled(obj client.Object, s status, token string) (done, ready bool) {
	if s.lastHandled != token || s.observedGeneration != obj.GetGeneration() {
		return false, false
	}
	c := s.condition(meta.ReadyCondition)
	if c == nil || c.Status == metav1.ConditionUnknown {
		return false, false
	}
	if c.ObservedGeneration != 0 && c.ObservedGeneration != obj.GetGeneration() {
		return false, false
	}
	if r := s.condition(meta.ReconcilingCondition); r != nil && r.Status == metav1.ConditionTrue && c.Status == metav1.ConditionTrue {
		return false, false
	}
	return true, c.Status == metav1.ConditionTrue
}

// progress is the line that describes where a reconcile is: the sync
// phase and wave of a Kustomization or HelmRelease, else the Ready message; empty before
// the controller picked the request up.
func progress(obj client.Object, s status, token string) string {
	if t, ok := appliedOf(obj); ok && t.Sync != nil {
		sp := t.Sync
		switch sp.Phase {
		case kustomizev1.PhaseSucceeded, kustomizev1.PhaseFailed, "":
		default:
			line := fmt.Sprintf("%s phase, wave %d", sp.Phase, sp.Wave)
			if sp.Message != "" {
				line += ": " + oneLine(sp.Message)
			}
			return line
		}
	}
	if r := s.condition(meta.ReconcilingCondition); r != nil && r.Status == metav1.ConditionTrue {
		return oneLine(r.Message)
	}
	if s.lastHandled != token {
		return "waiting for the controller to pick the request up"
	}
	if c := s.condition(meta.ReadyCondition); c != nil && c.Status == metav1.ConditionUnknown {
		return oneLine(c.Message)
	}
	return ""
}

// waitRendered waits until render-controller has rendered revision for the
// Kustomization or HelmRelease (status.renderedArtifact), so that the sync
// asked for next
// applies the source just fetched rather than the previous render. A
// Rendered=False for the current generation that differs from before (the
// condition as it was before the source reconcile) or names the revision
// is the render's failure and ends the wait; the same failure as before
// may be stale, so it is shown and the wait goes on.
func (g *globals) waitRendered(ctx context.Context, k *kind, key types.NamespacedName, revision string, before *metav1.Condition) error {
	announced := ""
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		obj := k.newObj()
		if err := g.client.Get(ctx, key, obj); err != nil {
			return notFound(err, k, key)
		}
		t, _ := appliedOf(obj)
		if a := t.Rendered; a != nil && a.Revision == revision {
			return nil
		}
		if c := apimeta.FindStatusCondition(t.Conditions, kustomizev1.RenderedCondition); c != nil &&
			c.Status == metav1.ConditionFalse && c.ObservedGeneration == obj.GetGeneration() {
			if strings.Contains(c.Message, revision) || before == nil || before.Status != c.Status || before.Message != c.Message {
				return negative(fmt.Errorf("%s: rendering %s failed: %s", ref(k, obj), revision, c.Message))
			}
			if announced != c.Message {
				fmt.Fprintf(g.out, "◎ render-controller reports: %s\n", oneLine(c.Message))
				announced = c.Message
			}
		}
		if announced == "" {
			fmt.Fprintf(g.out, "◎ waiting for render-controller to render %s\n", revision)
			announced = "waiting"
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for render-controller to render %s for %s; is it running?", revision, ref(k, obj))
		case <-ticker.C:
		}
	}
}

// notFound words a failed Get for a person.
func notFound(err error, k *kind, key types.NamespacedName) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found in namespace %s", k.Kind, key.Name, key.Namespace)
	}
	return fmt.Errorf("reading %s %s/%s: %w", k.Kind, key.Namespace, key.Name, err)
}

func newSuspendCmd(g *globals, suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a suspended object, or end a rollback's hold, reconcile it and wait for the result"
	if suspend {
		verb, short = "suspend", "Stop reconciling an object until it is resumed"
	}
	var wait bool
	c := &cobra.Command{
		Use:               verb + " source [git|helm|chart|oci]|kustomization|helmrelease|receiver|alert|alert-provider|image [repository|policy|update] NAME",
		Short:             short,
		Example:           "  plumb " + verb + " source git podinfo\n  plumb " + verb + " kustomization podinfo -n team-a\n  plumb " + verb + " helmrelease podinfo\n  plumb " + verb + " source helm bitnami\n  plumb " + verb + " alert-provider slack\n  plumb " + verb + " image update flux-system",
		Args:              cobra.ArbitraryArgs, // kindAndName checks them
		ValidArgsFunction: g.completeKindAndName(suspendableKinds()),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := kindAndName(args, suspendableKinds()...)
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
			if suspend {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
				if err := g.client.Patch(ctx, obj, patch); err != nil {
					return fmt.Errorf("suspending %s: %w", ref(k, obj), err)
				}
				fmt.Fprintf(g.out, "✔ %s suspended\n", ref(k, obj))
				return nil
			}
			// Resuming also ends a rollback's hold (plumb rollback), and
			// requests a reconcile, so the object catches up now rather
			// than at its next interval; the wait is for the controller to
			// handle it.
			if request.RolledBack(obj) {
				if err := request.EndRollback(ctx, g.client, obj); err != nil {
					return err
				}
				fmt.Fprintf(g.out, "► %s: rollback ended\n", ref(k, obj))
			}
			token, err := g.requestReconcile(ctx, obj, map[string]any{"suspend": false}, nil)
			if err != nil {
				return err
			}
			if !k.reconcilable {
				// A kind that records no handled request (none today):
				// the wait is for the generation the resume made.
				token = ""
			}
			fmt.Fprintf(g.out, "► %s resumed\n", ref(k, obj))
			if !wait {
				return nil
			}
			return g.waitHandled(ctx, k, key, token)
		},
	}
	if !suspend {
		c.Flags().BoolVar(&wait, "wait", true, "Wait for the reconcile that resuming starts.")
	}
	return c
}
