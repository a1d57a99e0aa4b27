package typedwatch

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
)

// Selection is what a cache applies to the lists and watches of one kind,
// as controller-runtime's cache.ByObject says it: a namespace (all when
// empty), label and field selectors (none when nil).
type Selection struct {
	Namespace string
	Label     labels.Selector
	Field     fields.Selector
}

// applyTo sets the selectors on a list or watch request, as
// controller-runtime's cache does.
func (s Selection) applyTo(opts *metav1.ListOptions) {
	if s.Label != nil {
		opts.LabelSelector = s.Label.String()
	}
	if s.Field != nil {
		opts.FieldSelector = s.Field.String()
	}
}

// Kind is a kind whose informer lists and watches through NewListWatch.
type Kind struct {
	// GVK is the kind, served under Resource (its plural, "kustomizations").
	GVK      schema.GroupVersionKind
	Resource string
	// Selection is what the cache keeps of it.
	Selection Selection
}

// NewListWatch returns the list and watch of kind: the requests
// controller-runtime's cache sends for a typed kind (the selection, watch
// bookmarks asked for), through a REST client whose JSON answers of the
// kind are decoded in one pass (NewClientNegotiator); a nil httpClient is
// made from cfg. What the informer
// does with them — the initial list as a watch with initial events
// (client-go's WatchListClient), a relist after a 410 Gone, retries and
// backoff, the transform — is client-go's, unchanged.
func NewListWatch(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, kind Kind) (*toolscache.ListWatch, error) {
	client, err := newRESTClient(cfg, httpClient, scheme, kind.GVK)
	if err != nil {
		return nil, err
	}
	listGVK := kind.GVK.GroupVersion().WithKind(kind.GVK.Kind + "List")
	if _, err := scheme.New(listGVK); err != nil {
		return nil, err
	}
	params := runtime.NewParameterCodec(scheme)
	request := func(opts *metav1.ListOptions) *rest.Request {
		kind.Selection.applyTo(opts)
		req := client.Get().Resource(kind.Resource).VersionedParams(opts, params)
		if kind.Selection.Namespace != "" {
			req.Namespace(kind.Selection.Namespace)
		}
		return req
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := scheme.New(listGVK)
			if err != nil {
				return nil, err
			}
			if err := request(&opts).Do(ctx).Into(list); err != nil {
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			return request(&opts).Watch(ctx)
		},
	}, nil
}

// newRESTClient returns a REST client for gvk's group version that asks
// for JSON and decodes it with NewClientNegotiator, its URL, rate limits
// and HTTP client as rest.RESTClientForConfigAndClient would make them.
func newRESTClient(base *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gvk schema.GroupVersionKind) (*rest.RESTClient, error) {
	negotiator, err := NewClientNegotiator(scheme, gvk)
	if err != nil {
		return nil, err
	}
	if httpClient == nil {
		if httpClient, err = rest.HTTPClientFor(base); err != nil {
			return nil, fmt.Errorf("the REST client of %s: %w", gvk, err)
		}
	}
	gv := gvk.GroupVersion()
	cfg := rest.CopyConfig(base)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	baseURL, versionedAPIPath, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the REST client of %s: %w", gvk, err)
	}
	rateLimiter := cfg.RateLimiter
	if rateLimiter == nil {
		qps, burst := cfg.QPS, cfg.Burst
		if qps == 0 {
			qps = rest.DefaultQPS
		}
		if burst == 0 {
			burst = rest.DefaultBurst
		}
		if qps > 0 {
			rateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
	}
	content := rest.ClientContentConfig{
		AcceptContentTypes: cfg.AcceptContentTypes,
		ContentType:        cfg.ContentType,
		GroupVersion:       gv,
		Negotiator:         negotiator,
	}
	client, err := rest.NewRESTClient(baseURL, versionedAPIPath, content, rateLimiter, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the REST client of %s: %w", gvk, err)
	}
	return client, nil
}

// NewInformerFunc returns a cache.Options.NewInformer for
// controller-runtime: the informer of each of kinds (by the Go type of
// its objects in scheme) lists and watches through NewListWatch, every
// other informer through the ListWatch controller-runtime hands it. The
// informers are client-go's shared index informers, as controller-runtime
// makes them.
func NewInformerFunc(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, kinds []Kind) (func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer, error) {
	byType := make(map[reflect.Type]*toolscache.ListWatch, len(kinds))
	for _, k := range kinds {
		obj, err := scheme.New(k.GVK)
		if err != nil {
			return nil, err
		}
		lw, err := NewListWatch(cfg, httpClient, scheme, k)
		if err != nil {
			return nil, err
		}
		byType[reflect.TypeOf(obj)] = lw
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if own, ok := byType[reflect.TypeOf(obj)]; ok {
			lw = own
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}, nil
}
