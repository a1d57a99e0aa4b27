package actions

import (
	"context"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/request"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/kinds"
)

// apiTimeout bounds the API calls of one action (httpapi.APITimeout;
// tests shorten it).
var apiTimeout = httpapi.APITimeout

// Result is the answer of an action: the reconcile request's token, which
// the object's status.lastHandledReconcileAt shows once the controller has
// acted on it (empty for suspend).
type Result struct {
	Requested string `json:"requested,omitempty"`
}

// reconcileRequest is the body of POST …/reconcile.
type reconcileRequest struct {
	WithSource bool `json:"withSource"`
}

// Reconcile serves POST …/{kind}/{namespace}/{name}/reconcile.
func Reconcile(w http.ResponseWriter, r *http.Request) {
	var req reconcileRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	c, obj, ok := target(ctx, w, r)
	if !ok {
		return
	}
	if req.WithSource {
		srcs, err := sources(ctx, c, obj)
		if err != nil {
			httpapi.APIError(w, err)
			return
		}
		for _, src := range srcs {
			if _, err := request.Reconcile(ctx, c, src, nil, nil); err != nil {
				httpapi.APIError(w, err)
				return
			}
		}
	}
	token, err := request.Reconcile(ctx, c, obj, nil, nil)
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{Requested: token})
}

// Suspend serves POST …/{kind}/{namespace}/{name}/suspend.
func Suspend(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	c, obj, ok := target(ctx, w, r)
	if !ok {
		return
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := c.Patch(ctx, obj, patch); err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{})
}

// Resume serves POST …/{kind}/{namespace}/{name}/resume.
func Resume(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	c, obj, ok := target(ctx, w, r)
	if !ok {
		return
	}
	if request.RolledBack(obj) {
		// Resuming ends a rollback's hold too, as plumb resume does.
		if err := request.EndRollback(ctx, c, obj); err != nil {
			httpapi.APIError(w, err)
			return
		}
	}
	token, err := request.Reconcile(ctx, c, obj, map[string]any{"suspend": false}, nil)
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{Requested: token})
}

// rollbackRequest is the body of POST …/rollback: the digest of an entry
// of status.history, and whether the hold ends at the next new render.
type rollbackRequest struct {
	Digest    string `json:"digest"`
	FollowGit bool   `json:"followGit"`
}

// Rollback serves POST …/{kind}/{namespace}/{name}/rollback for a
// Kustomization or HelmRelease, as `plumb rollback` does
// (request.Rollback): 400 for a digest that is not an earlier entry of the
// object's status.history — the one applied now included, which would
// hold nothing —, 404 for another kind.
func Rollback(w http.ResponseWriter, r *http.Request) {
	var req rollbackRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	c, obj, ok := target(ctx, w, r)
	if !ok {
		return
	}
	digests, current, ok := historyOf(obj)
	if !ok {
		httpapi.Error(w, http.StatusNotFound, "a %s cannot be rolled back", obj.GetObjectKind().GroupVersionKind().Kind)
		return
	}
	if req.Digest == "" || !slices.Contains(digests[min(1, len(digests)):], req.Digest) {
		httpapi.Error(w, http.StatusBadRequest, "%q is not an earlier render of status.history", req.Digest)
		return
	}
	follow := ""
	if req.FollowGit {
		follow = current
	}
	token, err := request.Rollback(ctx, c, obj, req.Digest, follow)
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{Requested: token})
}

// historyOf returns the render digests of obj's status.history, newest
// first, and the digest rendered now, for a kind that is rolled back.
func historyOf(obj client.Object) (digests []string, current string, ok bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		for _, h := range o.Status.History {
			digests = append(digests, h.Digest)
		}
		if a := o.Status.RenderedArtifact; a != nil {
			current = a.Digest
		}
		return digests, current, true
	case *helmv2.HelmRelease:
		for _, h := range o.Status.History {
			digests = append(digests, h.Digest)
		}
		if a := o.Status.RenderedArtifact; a != nil {
			current = a.Digest
		}
		return digests, current, true
	}
	return nil, "", false
}

// target reads the object the route's {kind}, {namespace} and {name} name with the user's client. On
// failure it has written the answer: 404 for an unknown kind, the API
// server's status (403, 404) otherwise.
func target(ctx context.Context, w http.ResponseWriter, r *http.Request) (client.Client, client.Object, bool) {
	s := access.From(r)
	if s == nil {
		httpapi.Error(w, http.StatusUnauthorized, "sign in first")
		return nil, nil, false
	}
	k, ok := kinds.Lookup(r.PathValue("kind"))
	if !ok {
		httpapi.Error(w, http.StatusNotFound, "no kind %q here", r.PathValue("kind"))
		return nil, nil, false
	}
	obj := k.New()
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := s.Client().Get(ctx, key, obj); err != nil {
		httpapi.APIError(w, err)
		return nil, nil, false
	}
	return s.Client(), obj, true
}

// sources are the objects reconciled before obj with withSource, in
// order: a Kustomization's source (requestableSource: not an
// ExternalArtifact, its producer's to refresh); a HelmRelease's HelmChart's
// source, then the HelmChart (as `plumb reconcile --with-source`). A
// source the user may not read is the answer (403 or 404), not skipped.
func sources(ctx context.Context, c client.Client, obj client.Object) ([]client.Object, error) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		src := requestableSource(o.Spec.SourceRef.Kind)
		if src == nil {
			return nil, nil
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Spec.SourceRef.Name}, src); err != nil {
			return nil, err
		}
		return []client.Object{src}, nil
	case *helmv2.HelmRelease:
		ns, name := o.GetHelmChart()
		if kind := o.GetChartSourceKind(); kind != sourcev1.HelmChartKind {
			// A chartRef's OCIRepository or ExternalArtifact: the chart's
			// source itself, no HelmChart between.
			src := requestableSource(kind)
			if src == nil {
				return nil, nil
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, src); err != nil {
				return nil, err
			}
			return []client.Object{src}, nil
		}
		chart := &sourcev1.HelmChart{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, chart); err != nil {
			return nil, err
		}
		src := requestableSource(chart.Spec.SourceRef.Kind)
		if src == nil {
			return []client.Object{chart}, nil
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}, src); err != nil {
			return nil, err
		}
		return []client.Object{src, chart}, nil
	}
	return nil, nil
}

// requestableSource is an empty object of the source kind named kind
// (ui/internal/kinds) when it honours reconcile requests, nil otherwise:
// an ExternalArtifact is refreshed by the program that writes it, not by
// Plumb.
func requestableSource(kind string) client.Object {
	k, ok := kinds.Lookup(kind)
	if !ok || k.GVK.Kind != kind || !k.Requestable() {
		return nil
	}
	return k.New()
}
