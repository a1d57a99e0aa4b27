package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/githubapp"
	"plumb.dev/pkg/kinds"
)

// configs is the dispatcher's configuration: which Alerts want an event
// (read from the manager's cache, matched by Matcher) and, for a Provider,
// the notifier that sends to it (its Secret read through the uncached
// reader, at most once per configTTL while deliveries succeed). It reads
// the cluster; it sends nothing and knows nothing of the stream.
type configs struct {
	// cache reads Alerts and Providers (the manager's cache); api reads
	// Secrets and the labels of involved objects, uncached.
	cache client.Client
	api   client.Reader
	// matcher decides which Alerts want an event.
	matcher Matcher
	// httpClient and policy are what every notifier sends through: no
	// redirects, and only to the addresses the policy allows.
	httpClient *http.Client
	policy     notifier.AddressPolicy
	// threads remembers each threading Provider's Slack threads across the
	// notifiers the cache drops and rebuilds.
	threads   *notifier.ThreadStore
	notifiers notifierCache
	// apps mints and caches the installation tokens of GitHub App
	// Providers: a token lives an hour, the notifiers ten seconds.
	apps githubapp.Tokens
}

// readTimeout bounds the API reads of one routing or delivery (labels,
// Provider, Secret).
const readTimeout = 30 * time.Second

// alertsFor returns the Alerts the event matches, across namespaces.
func (c *configs) alertsFor(ctx context.Context, e *events.Event) ([]notificationv1.Alert, error) {
	var list notificationv1.AlertList
	if err := c.cache.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing alerts: %w", err)
	}
	var (
		labels    map[string]string
		labelsErr error
		fetched   bool
	)
	getLabels := func() (map[string]string, error) {
		if !fetched {
			labels, labelsErr = c.labels(ctx, e.InvolvedObject)
			fetched = true
		}
		return labels, labelsErr
	}
	var out []notificationv1.Alert
	for _, a := range list.Items {
		ok, err := c.matcher.Match(&a, e, getLabels)
		if err != nil {
			if labelsErr != nil && !apierrors.IsNotFound(labelsErr) {
				return nil, err
			}
			// A bad regex is reported on the Alert by its reconciler; a
			// deleted object has no labels to match.
			continue
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// labels reads the involved object's labels (metadata only).
func (c *configs) labels(ctx context.Context, ref events.ObjectReference) (map[string]string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.APIVersion == "" {
		// Plumb's own kinds are known without one.
		known, ok := kinds.Lookup(ref.Kind)
		if !ok || known.GVK.Kind != ref.Kind {
			return nil, fmt.Errorf("the event names no apiVersion for kind %s", ref.Kind)
		}
		gv = known.GVK.GroupVersion()
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := c.api.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, err
	}
	return obj.GetLabels(), nil
}

// provider reads the Provider an Alert sends through.
func (c *configs) provider(ctx context.Context, alert *notificationv1.Alert) (*notificationv1.Provider, error) {
	var p notificationv1.Provider
	if err := c.cache.Get(ctx, client.ObjectKey{Namespace: alert.Namespace, Name: alert.Spec.ProviderRef.Name}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// notifier returns the provider's notifier, reading its Secret at most
// once per configTTL while deliveries succeed. A configuration that can
// never work (an insecure address, a bad type) is a PermanentError.
func (c *configs) notifier(ctx context.Context, provider *notificationv1.Provider) (notifier.Notifier, error) {
	if n, ok := c.notifiers.get(provider); ok {
		return n, nil
	}
	cfg, err := notifier.ConfigFor(ctx, c.api, provider)
	if err != nil {
		var insecure *notifier.InsecureError
		if errors.As(err, &insecure) {
			return nil, &notifier.PermanentError{Err: err}
		}
		return nil, err
	}
	cfg.Client = c.httpClient
	cfg.Dialer = c.policy.Dialer()
	if cfg.ThreadPerObject {
		cfg.Threads = c.threads.For(string(provider.UID))
	}
	if err := notifier.AuthenticateApp(ctx, &cfg, &c.apps); err != nil {
		return nil, err
	}
	n, err := notifier.New(cfg)
	if err != nil {
		return nil, &notifier.PermanentError{Err: err}
	}
	c.notifiers.put(provider, n)
	return n, nil
}

// forget drops the provider's notifier after a failed delivery: the
// Secret may have changed (a new address or token), so the retry reads it
// again.
func (c *configs) forget(provider *notificationv1.Provider) { c.notifiers.forget(provider) }

// configTTL bounds how long a resolved provider configuration is reused; a
// rotated Secret takes effect within it (at once after a failed delivery).
const configTTL = 10 * time.Second

// notifierCache keeps resolved notifiers by provider UID and generation,
// so a burst of events does not read the Secret once per event.
type notifierCache struct {
	mu      sync.Mutex
	entries map[string]notifierEntry
}

type notifierEntry struct {
	n       notifier.Notifier
	expires time.Time
}

func notifierKey(p *notificationv1.Provider) string {
	return fmt.Sprintf("%s/%d", p.UID, p.Generation)
}

func (c *notifierCache) get(p *notificationv1.Provider) (notifier.Notifier, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[notifierKey(p)]
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	return e.n, true
}

func (c *notifierCache) put(p *notificationv1.Provider, n notifier.Notifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]notifierEntry{}
	}
	now := time.Now()
	for k, e := range c.entries {
		if now.After(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[notifierKey(p)] = notifierEntry{n: n, expires: now.Add(configTTL)}
}

func (c *notifierCache) forget(p *notificationv1.Provider) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, notifierKey(p))
}
