package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// Bounds of a remote cluster's kubeconfig and connection
// (docs/design/remote-clusters.md). A kubeconfig with inline certificates
// is a few KiB; the Secret is written by a tenant.
const (
	maxKubeConfigBytes = 64 << 10
	// remoteDialTimeout bounds the TCP connect to a remote API server,
	// remoteRequestTimeout every request but the watcher's (a watch is
	// long by design; the API server ends it after its timeoutSeconds).
	remoteDialTimeout    = 10 * time.Second
	remoteRequestTimeout = 30 * time.Second
	// remoteQPS and remoteBurst throttle the client of a remote API
	// server without flow control: the defaults of --kube-api-qps and
	// --kube-api-burst.
	remoteQPS   = 50
	remoteBurst = 300
)

// The keys a kubeconfig is looked for in, in order, when
// spec.kubeConfig.secretRef.key is unset (Flux's defaults).
var defaultKubeConfigKeys = []string{"value", "value.yaml"}

// remoteKey names one remote cluster connection: the Secret it came from
// and the hash of the kubeconfig's bytes, so rotated credentials are a new
// connection and the old one goes when no object uses it any more.
type remoteKey struct {
	secret types.NamespacedName
	hash   string
}

// remoteCluster is what sync-controller keeps for one remote cluster: an
// engine over the kubeconfig's identity, its watcher (informers on the
// remote cluster, events into the local controller's queue), and the
// clients impersonating ServiceAccounts there.
type remoteCluster struct {
	config *rest.Config
	mapper apimeta.RESTMapper
	engine *engine.Engine
	stop   context.CancelFunc
	// impersonating holds one client per ServiceAccount user name; they
	// share the cluster's mapper. Kept until the cluster goes: the number
	// of ServiceAccounts of the objects that target it bounds them.
	impersonating map[string]client.Client
}

// remoteClusters keeps one remoteCluster per remoteKey while some
// Kustomization targets it, as the Impersonator keeps a client per
// ServiceAccount: created on first use, shared, and stopped (its
// informers with it) when the last object using it is deleted or moves to
// another cluster or to its own.
type remoteClusters struct {
	mu         sync.Mutex
	clusters   map[remoteKey]*remoteCluster
	connecting map[remoteKey]*pendingConnect
	users      users[remoteKey]
}

// release forgets that owner targets a remote cluster, stopping a cluster
// that no object uses any more.
func (rc *remoteClusters) release(owner manage.Owner) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.releaseLocked(owner)
}

func (rc *remoteClusters) releaseLocked(owner manage.Owner) {
	key, last := rc.users.drop(owner)
	if c := rc.clusters[key]; last && c != nil {
		c.stop()
		delete(rc.clusters, key)
	}
}

// stopAll stops every remote cluster's watcher: the manager is stopping.
func (rc *remoteClusters) stopAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for key, c := range rc.clusters {
		c.stop()
		delete(rc.clusters, key)
	}
	clear(rc.users)
}

// stopRemotesWith stops every remote cluster's watcher when the manager
// stops: they run outside of it, each from the reconcile that created it.
func (r *Syncer) stopRemotesWith(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.remotes.stopAll()
		return nil
	}))
}

// RemoteClusters returns how many remote clusters are connected (their
// watchers running).
func (r *Syncer) RemoteClusters() int {
	r.remotes.mu.Lock()
	defer r.remotes.mu.Unlock()
	return len(r.remotes.clusters)
}

// remoteEngineFor returns the engine that acts for app in the cluster its
// spec.kubeConfig names, as its ServiceAccount there when it has one
// (spec.serviceAccountName or --default-service-account, in app's
// namespace of the remote cluster, as Flux does). The Secret is read on
// every reconcile (uncached, with the controller's identity), so a rotated
// kubeconfig takes effect at the next one. Errors are reconcile failures
// with reason KubeConfigInvalid or RemoteClusterUnreachable.
func (r *Syncer) remoteEngineFor(ctx context.Context, app application) (*engine.Engine, error) {
	ref := app.spec().KubeConfig
	secret := types.NamespacedName{Namespace: app.object().GetNamespace(), Name: ref.SecretRef.Name}
	data, err := r.kubeConfigData(ctx, secret, ref.SecretRef.Key)
	if err != nil {
		return nil, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, err)
	}
	cfg, err := remoteConfig(data, r.remoteServers(), r.remoteProxy())
	if err != nil {
		return nil, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, fmt.Errorf("kubeconfig in Secret %s: %w", secret, err))
	}
	sum := sha256.Sum256(data)
	key := remoteKey{secret: secret, hash: hex.EncodeToString(sum[:])}
	cluster, err := r.remoteCluster(ctx, app.owner(), key, cfg)
	if err != nil {
		return nil, reconcile.Failed(kustomizev1.RemoteClusterUnreachableReason, fmt.Errorf("cluster of the kubeconfig in Secret %s (%s): %w", secret, cfg.Host, err))
	}
	sa, ok := serviceAccountOf(app, r.DefaultServiceAccount)
	if !ok {
		return cluster.engine, nil
	}
	c, err := r.remotes.impersonatingClient(cluster, UserName(sa), r.Client)
	if err != nil {
		return nil, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, err)
	}
	return cluster.engine.As(UserName(sa), c), nil
}

// kubeConfigData reads the kubeconfig from the Secret: the key when named,
// else the first of defaultKubeConfigKeys present.
func (r *Syncer) kubeConfigData(ctx context.Context, name types.NamespacedName, key string) ([]byte, error) {
	var secret corev1.Secret
	if err := r.reader().Get(ctx, name, &secret); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig Secret %s: %w", name, err)
	}
	keys := defaultKubeConfigKeys
	if key != "" {
		keys = []string{key}
	}
	for _, k := range keys {
		data, ok := secret.Data[k]
		if !ok {
			continue
		}
		if len(data) > maxKubeConfigBytes {
			return nil, fmt.Errorf("the kubeconfig in Secret %s key %q is %d bytes, more than the %d allowed", name, k, len(data), maxKubeConfigBytes)
		}
		return data, nil
	}
	return nil, fmt.Errorf("the Secret %s has no key %q holding a kubeconfig", name, keys)
}

// remoteConfig turns a kubeconfig from a Secret into the configuration of
// the remote client. The kubeconfig is hostile input: it may carry
// credentials inline only, so a plugin that runs a program or a reference
// to a file of sync-controller's filesystem is refused (checkInlineOnly),
// and only the server, its CA and the credentials are carried over — no
// proxy, no TLS verification turned off — with sync-controller's timeouts,
// its address policy (remoteServers) and a bound on every answer
// (boundedTransport). proxy is the proxy of every request: noProxy unless
// --remote-cluster-proxy-from-environment (Syncer.remoteProxy).
func remoteConfig(data []byte, servers netguard.Policy, proxy func(*http.Request) (*url.URL, error)) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %w", err)
	}
	if err := checkInlineOnly(kc); err != nil {
		return nil, err
	}
	parsed, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(parsed.Host)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server %q: only an https:// URL is allowed (credentials travel with every request)", parsed.Host)
	}
	dialer := servers.Dialer(remoteDialTimeout)
	return &rest.Config{
		Host:    parsed.Host,
		APIPath: parsed.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: parsed.ServerName,
			CAData:     parsed.CAData,
			CertData:   parsed.CertData,
			KeyData:    parsed.KeyData,
		},
		BearerToken: parsed.BearerToken,
		Username:    parsed.Username,
		Password:    parsed.Password,
		UserAgent:   ControllerName,
		Timeout:     remoteRequestTimeout,
		Dial:        dialer.DialContext,
		// Without a Proxy, client-go would take the proxy environment
		// variables: a proxy then makes the connection, and the address
		// policy, checked on what this process dials, would judge the
		// proxy, not the server.
		Proxy:         proxy,
		WrapTransport: boundRemoteResponses(maxRemoteResponseBytes),
	}, nil
}

// noProxy sends every request straight to its server.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// remoteProxy is the proxy of the remote clusters' requests: none, or the
// environment's with --remote-cluster-proxy-from-environment (where the
// remote clusters are reachable only through a proxy; the proxy, not
// sync-controller, then decides where a kubeconfig's server may be).
func (r *Syncer) remoteProxy() func(*http.Request) (*url.URL, error) {
	if r.RemoteClusterProxyFromEnvironment {
		return http.ProxyFromEnvironment
	}
	return noProxy
}

// remoteServers is where a kubeconfig's server may be: anywhere but the
// node's and the cloud's own services (link-local, instance metadata), and
// loopback only with --allow-loopback-kubeconfig-servers. Private ranges
// are allowed: that is where clusters are.
func (r *Syncer) remoteServers() netguard.Policy {
	return netguard.Policy{AllowPrivate: true, AllowLoopback: r.AllowLoopbackKubeConfigServers, LoopbackFlag: "--allow-loopback-kubeconfig-servers"}
}

// checkInlineOnly refuses what a kubeconfig from a Secret may not have:
// exec and auth-provider plugins (they run programs, or read the
// controller's own cloud credentials), any path of the local filesystem
// (a token, certificate, key or CA file: the controller's files, its own
// ServiceAccount token among them), and turning TLS verification off.
// Every entry is checked, not only the current context's: what the
// current context does not use is harmless today but not worth telling
// apart.
func checkInlineOnly(kc *clientcmdapi.Config) error {
	var problems []error
	for _, name := range sortedKeys(kc.AuthInfos) {
		a := kc.AuthInfos[name]
		refuse := func(what string) {
			problems = append(problems, fmt.Errorf("user %q: %s is not allowed, only inline credentials", name, what))
		}
		if a.Exec != nil {
			refuse("an exec plugin")
		}
		if a.AuthProvider != nil {
			refuse("an auth-provider plugin")
		}
		if a.TokenFile != "" {
			refuse("tokenFile")
		}
		if a.ClientCertificate != "" {
			refuse("client-certificate (a file path; client-certificate-data is)")
		}
		if a.ClientKey != "" {
			refuse("client-key (a file path; client-key-data is)")
		}
	}
	for _, name := range sortedKeys(kc.Clusters) {
		c := kc.Clusters[name]
		if c.CertificateAuthority != "" {
			problems = append(problems, fmt.Errorf("cluster %q: certificate-authority (a file path) is not allowed, only certificate-authority-data", name))
		}
		if c.InsecureSkipTLSVerify {
			problems = append(problems, fmt.Errorf("cluster %q: insecure-skip-tls-verify is not allowed", name))
		}
	}
	return errors.Join(problems...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// remoteCluster returns the connection of key, creating it on first use,
// and records that owner uses it (releasing the one it used before).
// Creating one checks that the cluster answers an authenticated request
// (its API groups), then starts its watcher; a failure keeps nothing, so
// the next reconcile tries again.
func (r *Syncer) remoteCluster(ctx context.Context, owner manage.Owner, key remoteKey, cfg *rest.Config) (*remoteCluster, error) {
	rc := &r.remotes
	for {
		rc.mu.Lock()
		if prev, ok := rc.users[owner]; ok && prev != key {
			rc.releaseLocked(owner)
		}
		if c, ok := rc.clusters[key]; ok {
			rc.users[owner] = key
			rc.mu.Unlock()
			return c, nil
		}
		if p, ok := rc.connecting[key]; ok {
			// Someone is connecting to this cluster: wait for that one
			// attempt rather than making a second.
			rc.mu.Unlock()
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
		// (release): a tenant's slow server must hold up only the
		// objects that target it.
		p := &pendingConnect{done: make(chan struct{})}
		if rc.connecting == nil {
			rc.connecting = map[remoteKey]*pendingConnect{}
		}
		rc.connecting[key] = p
		rc.mu.Unlock()

		c, err := r.connect(ctx, cfg, key.secret.Namespace)

		rc.mu.Lock()
		delete(rc.connecting, key)
		if err == nil {
			if rc.clusters == nil {
				rc.clusters, rc.users = map[remoteKey]*remoteCluster{}, users[remoteKey]{}
			}
			rc.clusters[key] = c
			rc.users[owner] = key
		}
		p.err = err
		close(p.done)
		rc.mu.Unlock()
		return c, err
	}
}

// pendingConnect is a connection to a remote cluster being made; done
// closes when it is made or failed (err).
type pendingConnect struct {
	done chan struct{}
	err  error
}

// connect builds the client, REST mapper, watcher and engine of a remote
// cluster and starts the watcher; it runs until the cluster is released.
func (r *Syncer) connect(ctx context.Context, cfg *rest.Config, ownersNamespace string) (*remoteCluster, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerGroups(); err != nil {
		return nil, err
	}
	// As for the local cluster (app.RESTConfig): no client-side throttle
	// where the API server has flow control of its own, else the
	// defaults of --kube-api-qps and --kube-api-burst. client-go's own
	// default, 5 a second, would make a sync of 1,000 objects take
	// minutes.
	cfg = rest.CopyConfig(cfg)
	if app.FlowControlled(cfg) {
		cfg.QPS, cfg.Burst = -1, -1
	} else {
		cfg.QPS, cfg.Burst = remoteQPS, remoteBurst
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	scheme := r.Client.Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, err
	}
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	w, err := r.Engine.Watcher().ForCluster(watchCfg, scheme, mapper, ownersNamespace)
	if err != nil {
		return nil, err
	}
	// The watcher outlives the reconcile that created it: it is stopped
	// by release, not by the reconcile's context.
	runCtx, stop := context.WithCancel(context.Background())
	go func() { _ = w.Start(runCtx) }()
	waitCtx, cancel := context.WithTimeout(ctx, remoteRequestTimeout)
	defer cancel()
	if !w.WaitStarted(waitCtx) {
		stop()
		return nil, errors.New("the watch of the remote cluster did not start")
	}
	return &remoteCluster{
		config: cfg, mapper: mapper, engine: r.Engine.ForCluster(c, mapper, w), stop: stop,
		impersonating: map[string]client.Client{},
	}, nil
}

// impersonatingClient returns cluster's client acting as user, creating it
// on first use.
func (rc *remoteClusters) impersonatingClient(cluster *remoteCluster, user string, local client.Client) (client.Client, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c, ok := cluster.impersonating[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(cluster.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: local.Scheme(), Mapper: cluster.mapper})
	if err != nil {
		return nil, fmt.Errorf("building a client for %s in the remote cluster: %w", user, err)
	}
	cluster.impersonating[user] = c
	return c, nil
}
