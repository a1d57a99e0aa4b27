package health

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListerFor lists with c as unstructured objects. A controller-runtime
// manager's client serves unstructured lists from the API server, not from
// its cache: a typed Pod list there would start an informer on every Pod
// of the cluster, which a fleet of a thousand applications must not pay
// for to explain the one that is failing.
func ListerFor(c client.Reader) Lister {
	return func(ctx context.Context, apiVersion, kind, namespace string, selector labels.Selector, limit int64) ([]unstructured.Unstructured, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(apiVersion)
		list.SetKind(kind + "List")
		err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}, client.Limit(limit))
		if err != nil {
			return nil, err
		}
		if int64(len(list.Items)) > limit {
			// A server that ignores limit (a fake, an aggregated API)
			// still gives no more than asked for.
			list.Items = list.Items[:limit]
		}
		return list.Items, nil
	}
}
