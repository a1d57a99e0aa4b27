package target

import (
	"context"
	"fmt"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/manage"
	"plumb.dev/sync-controller/internal/engine"
)

// Clients is the one cache of the clients syncs act through, keyed by
// cluster and identity, and of the connections to remote clusters. Each
// Kustomization or HelmRelease uses one client (clientKey) at a time; a
// client is kept while some object uses it, and a remote connection while
// some object uses any identity in it: created on first use, shared,
// dropped when the last object using it is deleted or moves elsewhere.
//
// In the cluster sync-controller runs in, the clients impersonating
// ServiceAccounts start from the controller's configuration and share the
// controller's REST mapper; client-go shares the connections of
// transports with the same TLS settings. The controller's own identity
// there needs no client of the cache: it is the reconciler's engine.
type Clients struct {
	config *rest.Config
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper

	mu sync.Mutex
	// clients impersonating a ServiceAccount, in any cluster.
	clients map[clientKey]client.Client
	// remotes are the connected remote clusters; connecting, the ones
	// being connected.
	remotes    map[connKey]*remote
	connecting map[connKey]*pendingConnect
	// users is what each object uses (keyed by kind too: a Kustomization
	// and a HelmRelease may share a name).
	users map[manage.Owner]clientKey
}

// connKey names a connection: the zero connKey is the cluster
// sync-controller runs in; a remote one is per cluster and per kind of
// owner, as its watcher wakes the reconciler of one kind.
type connKey struct {
	cluster Cluster
	kind    string
}

// clientKey names a client: a connection and the user it impersonates,
// "" for the connection's own identity.
type clientKey struct {
	conn connKey
	user string
}

// NewClients returns the cache. config is the controller's own
// configuration, which clients impersonating ServiceAccounts in this
// cluster start from; nil allows only the controller's own identity here
// (remote clusters impersonate from their kubeconfig). scheme is the
// scheme of every client, mapper the REST mapper of this cluster's.
func NewClients(config *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper) *Clients {
	return &Clients{config: config, scheme: scheme, mapper: mapper,
		clients: map[clientKey]client.Client{}, remotes: map[connKey]*remote{}, users: map[manage.Owner]clientKey{}}
}

// impersonates reports whether ServiceAccounts can be impersonated in this
// cluster.
func (c *Clients) impersonates() bool { return c.config != nil }

// local returns the client of this cluster acting as user for owner,
// creating it on first use. It shares the controller's REST mapper.
func (c *Clients) local(owner manage.Owner, user string) (client.Client, error) {
	return c.client(owner, clientKey{user: user}, c.config, c.mapper)
}

// remoteAs returns conn's client acting as user for owner, creating it on
// first use. It shares the connection's REST mapper.
func (c *Clients) remoteAs(owner manage.Owner, key connKey, conn *remote, user string) (client.Client, error) {
	return c.client(owner, clientKey{conn: key, user: user}, conn.config, conn.mapper)
}

// client returns the client k names, made on first use from config to act
// as k.user, and records that owner uses it.
func (c *Clients) client(owner manage.Owner, k clientKey, config *rest.Config, mapper apimeta.RESTMapper) (client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.clients[k]
	if !ok {
		cfg := rest.CopyConfig(config)
		// Only the user name: the API server adds a ServiceAccount's groups
		// (system:serviceaccounts, system:serviceaccounts:<ns>) itself, and
		// naming groups would need the impersonate verb on groups too.
		cfg.Impersonate = rest.ImpersonationConfig{UserName: k.user}
		var err error
		if cl, err = client.New(cfg, client.Options{Scheme: c.scheme, Mapper: mapper}); err != nil {
			return nil, fmt.Errorf("building a client acting as %s: %w", k.user, err)
		}
		c.clients[k] = cl
	}
	c.useLocked(owner, k)
	return cl, nil
}

// use records that owner uses k.
func (c *Clients) use(owner manage.Owner, k clientKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.useLocked(owner, k)
}

func (c *Clients) useLocked(owner manage.Owner, k clientKey) {
	prev, ok := c.users[owner]
	c.users[owner] = k
	if ok && prev != k {
		c.dropUnusedLocked(prev)
	}
}

// Release forgets what owner uses, dropping what no object uses any more.
func (c *Clients) Release(owner manage.Owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(owner)
}

func (c *Clients) releaseLocked(owner manage.Owner) {
	prev, ok := c.users[owner]
	if !ok {
		return
	}
	delete(c.users, owner)
	c.dropUnusedLocked(prev)
}

// releaseLocal forgets what owner uses in this cluster: it targets a
// remote one now.
func (c *Clients) releaseLocal(owner manage.Owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.users[owner]; ok && prev.conn == (connKey{}) {
		c.releaseLocked(owner)
	}
}

// dropUnusedLocked drops k's client when no object uses it any more, and
// its remote connection — stopping its watcher — when no object uses any
// identity in it.
func (c *Clients) dropUnusedLocked(k clientKey) {
	clientUsed, connUsed := false, false
	for _, other := range c.users {
		clientUsed = clientUsed || other == k
		connUsed = connUsed || other.conn == k.conn
	}
	if !clientUsed {
		delete(c.clients, k)
	}
	if conn := c.remotes[k.conn]; conn != nil && !connUsed {
		conn.stop()
		delete(c.remotes, k.conn)
	}
}

// remote returns the connection of key, connecting on first use, and
// records that owner uses it (letting go of the connection it used
// before). A connection checks that the cluster answers an authenticated
// request, then starts its watcher (connect); a failure keeps nothing, so
// the next reconcile tries again.
func (c *Clients) remote(ctx context.Context, owner manage.Owner, key connKey, connect func(context.Context) (*remote, error)) (*remote, error) {
	for {
		c.mu.Lock()
		if prev, ok := c.users[owner]; ok && prev.conn != key {
			c.releaseLocked(owner)
		}
		if conn, ok := c.remotes[key]; ok {
			if _, ok := c.users[owner]; !ok {
				c.users[owner] = clientKey{conn: key}
			}
			c.mu.Unlock()
			return conn, nil
		}
		if p, ok := c.connecting[key]; ok {
			// Someone is connecting to this cluster: wait for that one
			// attempt rather than making a second.
			c.mu.Unlock()
			select {
			case <-p.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if p.err != nil {
				return nil, p.err
			}
			continue // now connected: take it as its user
		}
		// Connected outside the lock, which every reconcile takes
		// (Release): a tenant's slow server must hold up only the objects
		// that target it.
		p := &pendingConnect{done: make(chan struct{})}
		if c.connecting == nil {
			c.connecting = map[connKey]*pendingConnect{}
		}
		c.connecting[key] = p
		c.mu.Unlock()

		conn, err := connect(ctx)

		c.mu.Lock()
		delete(c.connecting, key)
		if err == nil {
			c.remotes[key] = conn
			c.users[owner] = clientKey{conn: key}
		}
		p.err = err
		close(p.done)
		c.mu.Unlock()
		return conn, err
	}
}

// pendingConnect is a connection to a remote cluster being made; done
// closes when it is made or failed (err).
type pendingConnect struct {
	done chan struct{}
	err  error
}

// StopAll stops every remote cluster's watcher: the manager is stopping.
func (c *Clients) StopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, conn := range c.remotes {
		conn.stop()
		delete(c.remotes, key)
	}
	for owner, k := range c.users {
		if k.conn != (connKey{}) {
			delete(c.users, owner)
			delete(c.clients, k)
		}
	}
}

// RemoteClusters returns how many remote clusters are connected (their
// watchers running).
func (c *Clients) RemoteClusters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.remotes)
}

// remote is what is kept of one remote cluster: its configuration and
// REST mapper (the impersonating clients start from them), an engine over
// the kubeconfig's identity, and its watcher (informers on the remote
// cluster, events into the local reconciler's queue), stopped by stop.
type remote struct {
	config *rest.Config
	mapper apimeta.RESTMapper
	engine *engine.Engine
	stop   context.CancelFunc
}
