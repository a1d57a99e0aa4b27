package actions

import (
	"net/http"
	"slices"
	"strings"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/request"
	"plumb.dev/ui/internal/httpapi"
)

// maxSyncOnly bounds the objects one selective sync may name, as
// sync-controller does.
const maxSyncOnly = 100

// syncRequest is the body of POST …/sync: only, when not empty, makes the
// sync selective (Kind/namespace/name of objects of the render).
type syncRequest struct {
	Only []string `json:"only"`
}

// Sync serves POST …/{kind}/{namespace}/{name}/sync: a manual sync of a
// Kustomization or HelmRelease with syncPolicy Manual, as `plumb sync`
// asks for it — plumb.dev/sync set to a new token (plumb.dev/sync-only
// to the selection, empty for all) and a reconcile requested in the same
// patch, with the user's own client. 409 for an object that syncs on its
// own, 400 for a kind that is not applied or a selection that names no
// object.
func Sync(w http.ResponseWriter, r *http.Request) {
	var req syncRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	for _, ref := range req.Only {
		if parts := strings.Split(ref, "/"); strings.Contains(ref, ",") || len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
			httpapi.Error(w, http.StatusBadRequest, "%q is not Kind/namespace/name", ref)
			return
		}
	}
	if len(req.Only) > maxSyncOnly {
		httpapi.Error(w, http.StatusBadRequest, "a selective sync names at most %d objects", maxSyncOnly)
		return
	}
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	c, obj, ok := target(ctx, w, r)
	if !ok {
		return
	}
	a, applied := inspect.AppliedOf(obj)
	if !applied {
		httpapi.Error(w, http.StatusBadRequest, "only a Kustomization or a HelmRelease syncs")
		return
	}
	if a.SyncPolicy != kustomizev1.SyncPolicyManual {
		httpapi.Error(w, http.StatusConflict, "%s %s/%s has syncPolicy %s and syncs on its own", a.Kind, obj.GetNamespace(), obj.GetName(), a.SyncPolicy)
		return
	}
	token, err := request.Reconcile(ctx, c, obj, nil, map[string]string{
		kustomizev1.SyncRequestAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
		kustomizev1.SyncOnlyAnnotation:    strings.Join(req.Only, ","),
	})
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	httpapi.JSON(w, http.StatusOK, Result{Requested: token})
}
