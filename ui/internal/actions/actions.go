package actions

import (
	"context"
	"net/http"

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
	token, err := request.Reconcile(ctx, c, obj, map[string]any{"suspend": false}, nil)
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{Requested: token})
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
// order: a Kustomization's GitRepository, OCIRepository or Bucket (an
// ExternalArtifact is its producer's to refresh); a HelmRelease's HelmChart's
// source, then the HelmChart (as `plumb reconcile --with-source`). A
// source the user may not read is the answer (403 or 404), not skipped.
func sources(ctx context.Context, c client.Client, obj client.Object) ([]client.Object, error) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		if o.Spec.SourceRef.Kind == sourcev1.ExternalArtifactKind {
			return nil, nil // its producer refreshes it, not Plumb
		}
		k, ok := kinds.Lookup(o.Spec.SourceRef.Kind)
		if !ok || !k.Source {
			k, _ = kinds.Lookup(sourcev1.GitRepositoryKind)
		}
		src := k.New()
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Spec.SourceRef.Name}, src); err != nil {
			return nil, err
		}
		return []client.Object{src}, nil
	case *helmv2.HelmRelease:
		ns, name := o.GetHelmChart()
		chart := &sourcev1.HelmChart{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, chart); err != nil {
			return nil, err
		}
		var src client.Object = &sourcev1.HelmRepository{}
		if k, ok := kinds.Lookup(chart.Spec.SourceRef.Kind); ok && k.Source {
			src = k.New() // a GitRepository or a Bucket
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}, src); err != nil {
			return nil, err
		}
		return []client.Object{src, chart}, nil
	}
	return nil, nil
}
