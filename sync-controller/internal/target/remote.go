package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/netguard"
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

// userAgent is the user agent of a remote cluster's requests:
// sync-controller's name (controller.ControllerName).
const userAgent = "sync-controller"

// The keys a kubeconfig is looked for in, in order, when
// spec.kubeConfig.secretRef.key is unset (Flux's defaults).
var defaultKubeConfigKeys = []string{"value", "value.yaml"}

// kubeConfigData reads the kubeconfig from the Secret: the key when named,
// else the first of defaultKubeConfigKeys present.
func kubeConfigData(ctx context.Context, reader client.Reader, name types.NamespacedName, key string) ([]byte, error) {
	var secret corev1.Secret
	if err := reader.Get(ctx, name, &secret); err != nil {
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
// --remote-cluster-proxy-from-environment (Resolver.remoteProxy).
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
		UserAgent:   userAgent,
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
func (r *Resolver) remoteProxy() func(*http.Request) (*url.URL, error) {
	if r.RemoteClusterProxyFromEnvironment {
		return http.ProxyFromEnvironment
	}
	return noProxy
}

// remoteServers is where a kubeconfig's server may be: anywhere but the
// node's and the cloud's own services (link-local, instance metadata), and
// loopback only with --allow-loopback-kubeconfig-servers. Private ranges
// are allowed: that is where clusters are.
func (r *Resolver) remoteServers() netguard.Policy {
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

// connect builds the client, REST mapper, watcher and engine of a remote
// cluster from local's, and starts the watcher; it runs until the
// connection is dropped (Clients).
func connect(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, local *engine.Engine, ownersNamespace string) (*remote, error) {
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
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, err
	}
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	w, err := local.Watcher().ForCluster(watchCfg, scheme, mapper, ownersNamespace)
	if err != nil {
		return nil, err
	}
	// The watcher outlives the reconcile that created it: it is stopped
	// by Clients when no object uses it, not by the reconcile's context.
	runCtx, stop := context.WithCancel(context.Background())
	go func() { _ = w.Start(runCtx) }()
	waitCtx, cancel := context.WithTimeout(ctx, remoteRequestTimeout)
	defer cancel()
	if !w.WaitStarted(waitCtx) {
		stop()
		return nil, errors.New("the watch of the remote cluster did not start")
	}
	return &remote{config: cfg, mapper: mapper, engine: local.ForCluster(c, mapper, w), stop: stop}, nil
}
