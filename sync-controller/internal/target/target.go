package target

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// Request is what an object says of where its sync writes.
type Request struct {
	// Owner is the Kustomization or HelmRelease: the user of the clients
	// (Resolver.Release lets them go), and its namespace is the
	// ServiceAccount's and the kubeconfig Secret's.
	Owner manage.Owner
	// ServiceAccountName is spec.serviceAccountName.
	ServiceAccountName string
	// KubeConfig is spec.kubeConfig; nil is the cluster sync-controller
	// runs in.
	KubeConfig *kustomizev1.KubeConfigReference
}

// Target is where and as whom a sync writes.
type Target struct {
	// Cluster is where; the zero Cluster is the cluster sync-controller
	// runs in.
	Cluster Cluster
	// ServiceAccount is as whom; one not Named is the cluster's own
	// identity: sync-controller's, or the kubeconfig's.
	ServiceAccount ServiceAccount
	// Engine acts in Cluster as ServiceAccount: its client, REST mapper
	// and watcher are that cluster's, and what it remembers of applied
	// objects and health is kept per cluster.
	Engine *engine.Engine
}

// Cluster names a cluster a sync writes to. A remote one is named by the
// Secret holding its kubeconfig and the SHA-256 of the kubeconfig's
// bytes, so rotated credentials are a new connection and the old one goes
// when no object uses it any more.
type Cluster struct {
	KubeConfigSecret types.NamespacedName
	KubeConfigHash   string
}

// Remote reports whether c is not the cluster sync-controller runs in.
func (c Cluster) Remote() bool { return c != Cluster{} }

// ServiceAccount is the identity a sync acts as, and where its name came
// from.
type ServiceAccount struct {
	types.NamespacedName
	// ByDefault: the name is --default-service-account's, the object
	// naming none itself.
	ByDefault bool
}

// Named reports whether there is a ServiceAccount to act as.
func (sa ServiceAccount) Named() bool { return sa.Name != "" }

// UserName is the user name the API server gives the ServiceAccount, the
// one a client impersonates.
func (sa ServiceAccount) UserName() string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// Resolver resolves the Targets of one reconciler's objects. Its fields
// are the reconciler's; Clients is shared.
type Resolver struct {
	// Clients keeps the clients; shared by the reconcilers of both kinds.
	Clients *Clients
	// Local is the reconciler's engine in the cluster sync-controller runs
	// in, as sync-controller. A remote cluster's engine is made from it
	// (engine.ForCluster), and its watcher's events go to Local's watcher,
	// which wakes the reconciler.
	Local *engine.Engine
	// Reader reads, uncached and as sync-controller, the kubeconfig
	// Secrets and the ServiceAccounts.
	Reader client.Reader
	// DefaultServiceAccount is the ServiceAccount, in its own namespace,
	// that an object without spec.serviceAccountName acts as
	// (--default-service-account); empty is the cluster's own identity.
	DefaultServiceAccount string
	// AllowLoopbackKubeConfigServers lets a kubeconfig name a server on a
	// loopback address (--allow-loopback-kubeconfig-servers).
	AllowLoopbackKubeConfigServers bool
	// RemoteClusterProxyFromEnvironment sends a remote cluster's requests
	// through the environment's proxy
	// (--remote-cluster-proxy-from-environment).
	RemoteClusterProxyFromEnvironment bool
}

// serviceAccountOf decides the ServiceAccount req acts as:
// spec.serviceAccountName, else --default-service-account, in the owner's
// namespace (of the remote cluster too, as Flux does); none when neither
// is set. The one place that decides it.
func (r *Resolver) serviceAccountOf(req Request) ServiceAccount {
	sa := ServiceAccount{NamespacedName: types.NamespacedName{Namespace: req.Owner.Namespace, Name: req.ServiceAccountName}}
	if sa.Name == "" && r.DefaultServiceAccount != "" {
		sa.Name, sa.ByDefault = r.DefaultServiceAccount, true
	}
	if sa.Name == "" {
		return ServiceAccount{}
	}
	return sa
}

// Resolve returns where and as whom req's sync writes, and records that
// req.Owner uses that client (letting go of what it used before). The
// kubeconfig Secret of a remote cluster is read at every call (uncached),
// so a rotated kubeconfig takes effect at the next reconcile; its errors
// are reconcile failures with reason KubeConfigInvalid or
// RemoteClusterUnreachable.
func (r *Resolver) Resolve(ctx context.Context, req Request) (Target, error) {
	sa := r.serviceAccountOf(req)
	if req.KubeConfig != nil {
		return r.resolveRemote(ctx, req, sa)
	}
	t := Target{ServiceAccount: sa, Engine: r.Local}
	if !sa.Named() || !r.Clients.impersonates() {
		r.Clients.Release(req.Owner)
		if sa.Named() {
			return Target{}, fmt.Errorf("ServiceAccount %s is named but sync-controller has no impersonation set up", sa.NamespacedName)
		}
		return t, nil
	}
	c, err := r.Clients.local(req.Owner, sa.UserName())
	if err != nil {
		return Target{}, err
	}
	t.Engine = r.Local.As(sa.UserName(), c)
	return t, nil
}

// resolveRemote is Resolve for the remote cluster of req.KubeConfig.
func (r *Resolver) resolveRemote(ctx context.Context, req Request, sa ServiceAccount) (Target, error) {
	r.Clients.releaseLocal(req.Owner)
	ref := req.KubeConfig
	secret := types.NamespacedName{Namespace: req.Owner.Namespace, Name: ref.SecretRef.Name}
	data, err := kubeConfigData(ctx, r.Reader, secret, ref.SecretRef.Key)
	if err != nil {
		return Target{}, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, err)
	}
	cfg, err := remoteConfig(data, r.remoteServers(), r.remoteProxy())
	if err != nil {
		return Target{}, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, fmt.Errorf("kubeconfig in Secret %s: %w", secret, err))
	}
	sum := sha256.Sum256(data)
	cluster := Cluster{KubeConfigSecret: secret, KubeConfigHash: hex.EncodeToString(sum[:])}
	key := connKey{cluster: cluster, kind: req.Owner.Kind}
	conn, err := r.Clients.remote(ctx, req.Owner, key, func(ctx context.Context) (*remote, error) {
		return connect(ctx, cfg, r.Clients.scheme, r.Local, secret.Namespace)
	})
	if err != nil {
		return Target{}, reconcile.Failed(kustomizev1.RemoteClusterUnreachableReason, fmt.Errorf("cluster of the kubeconfig in Secret %s (%s): %w", secret, cfg.Host, err))
	}
	t := Target{Cluster: cluster, ServiceAccount: sa, Engine: conn.engine}
	if !sa.Named() {
		r.Clients.use(req.Owner, clientKey{conn: key})
		return t, nil
	}
	c, err := r.Clients.remoteAs(req.Owner, key, conn, sa.UserName())
	if err != nil {
		return Target{}, reconcile.Failed(kustomizev1.KubeConfigInvalidReason, err)
	}
	t.Engine = conn.engine.As(sa.UserName(), c)
	return t, nil
}

// Release lets go of what owner uses: it was deleted.
func (r *Resolver) Release(owner manage.Owner) { r.Clients.Release(owner) }
