package reconcile

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Referrers returns the map function of a watch on a referenced kind (a
// source, a chart, a values ConfigMap): the objects of newList's kind whose
// field index holds key(o) for the object o that changed, as requests. The
// index is one the reconciler registered with the manager's field indexer;
// sameNamespace narrows the list to o's namespace, for references that
// cannot leave it. A failed list is logged and maps to nothing: the
// referrers' own interval catches up.
func Referrers(c client.Reader, newList func() client.ObjectList, index string, key func(client.Object) string, sameNamespace bool) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		list := newList()
		opts := []client.ListOption{client.MatchingFields{index: key(o)}}
		if sameNamespace {
			opts = append(opts, client.InNamespace(o.GetNamespace()))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the objects that refer to a changed object", "index", index)
			return nil
		}
		var reqs []ctrlreconcile.Request
		_ = apimeta.EachListItem(list, func(item runtime.Object) error {
			if obj, ok := item.(client.Object); ok {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
