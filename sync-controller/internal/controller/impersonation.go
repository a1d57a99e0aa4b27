package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	"plumb.dev/pkg/manage"
	"plumb.dev/sync-controller/internal/engine"
)

// Impersonator builds the clients that act as the ServiceAccounts of
// Kustomizations and HelmReleases (rest.Config.Impersonate), one per
// ServiceAccount, and keeps each while some Kustomization or HelmRelease
// uses it.
//
// A client holds no credentials of the ServiceAccount — the API server
// decides on every request what the impersonated user may do — so a cached
// client never goes stale; it is dropped when the last object using
// it is deleted or names another ServiceAccount. The clients share the
// controller's REST mapper, and client-go shares the connections of
// transports with the same TLS settings.
type Impersonator struct {
	config *rest.Config
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper

	mu sync.Mutex
	// clients by ServiceAccount, and which ServiceAccount each
	// Kustomization or HelmRelease uses (keyed by kind too: one of each
	// may share a name).
	clients map[types.NamespacedName]client.Client
	users   users[types.NamespacedName]
}

// NewImpersonator returns an Impersonator whose clients start from cfg, the
// controller's own configuration.
func NewImpersonator(cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper) *Impersonator {
	return &Impersonator{
		config:  cfg,
		scheme:  scheme,
		mapper:  mapper,
		clients: map[types.NamespacedName]client.Client{},
		users:   users[types.NamespacedName]{},
	}
}

// UserName is the user name the API server gives a ServiceAccount.
func UserName(sa types.NamespacedName) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// ClientFor returns the client that acts as sa for ks, a Kustomization or HelmRelease,
// and remembers that ks uses it.
func (i *Impersonator) ClientFor(ks manage.Owner, sa types.NamespacedName) (client.Client, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if prev, ok := i.users[ks]; ok && prev != sa {
		i.releaseLocked(ks)
	}
	c, ok := i.clients[sa]
	if !ok {
		cfg := rest.CopyConfig(i.config)
		// Only the user name: the API server adds a ServiceAccount's groups
		// (system:serviceaccounts, system:serviceaccounts:<ns>) itself, and
		// naming groups would need the impersonate verb on groups too.
		cfg.Impersonate = rest.ImpersonationConfig{UserName: UserName(sa)}
		var err error
		if c, err = client.New(cfg, client.Options{Scheme: i.scheme, Mapper: i.mapper}); err != nil {
			return nil, fmt.Errorf("building a client for ServiceAccount %s: %w", sa, err)
		}
		i.clients[sa] = c
	}
	i.users[ks] = sa
	return c, nil
}

// Release forgets that ks uses a ServiceAccount, dropping the client no
// object uses any more.
func (i *Impersonator) Release(ks manage.Owner) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.releaseLocked(ks)
}

func (i *Impersonator) releaseLocked(ks manage.Owner) {
	if sa, last := i.users.drop(ks); last {
		delete(i.clients, sa)
	}
}

// Cached returns how many clients are kept.
func (i *Impersonator) Cached() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.clients)
}

// serviceAccountOf returns the ServiceAccount a Kustomization or
// HelmRelease acts as: spec.serviceAccountName, else the default name, in
// the object's namespace; ok is false when neither is set (the controller's own
// identity).
func serviceAccountOf(obj application, defaultName string) (sa types.NamespacedName, ok bool) {
	name := obj.spec().ServiceAccountName
	if name == "" {
		name = defaultName
	}
	if name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.object().GetNamespace(), Name: name}, true
}

// engineFor returns the engine that acts for obj: in the remote cluster
// its spec.kubeConfig names (remote.go), else in this one; as its
// ServiceAccount when it has one, otherwise as the controller (or, remote,
// the kubeconfig's identity).
func (r *Syncer) engineFor(ctx context.Context, obj application) (*engine.Engine, error) {
	key := obj.owner()
	if obj.spec().KubeConfig != nil {
		if r.Impersonator != nil {
			r.Impersonator.Release(key)
		}
		return r.remoteEngineFor(ctx, obj)
	}
	r.remotes.release(key)
	sa, ok := serviceAccountOf(obj, r.DefaultServiceAccount)
	if !ok || r.Impersonator == nil {
		if r.Impersonator != nil {
			r.Impersonator.Release(key)
		}
		if ok {
			return nil, fmt.Errorf("ServiceAccount %s is named but sync-controller has no impersonation set up", sa)
		}
		return r.Engine, nil
	}
	c, err := r.Impersonator.ClientFor(key, sa)
	if err != nil {
		return nil, err
	}
	return r.Engine.As(UserName(sa), c), nil
}

// serviceAccountGone reports whether obj acts as a ServiceAccount that no
// longer exists (read with the controller's identity, uncached).
func (r *Syncer) serviceAccountGone(ctx context.Context, obj application) (types.NamespacedName, bool, error) {
	sa, ok := serviceAccountOf(obj, r.DefaultServiceAccount)
	if !ok || obj.spec().KubeConfig != nil {
		// A remote cluster's ServiceAccount is not read: its API server
		// refuses what the impersonated user may not do.
		return sa, false, nil
	}
	err := r.reader().Get(ctx, sa, &corev1.ServiceAccount{})
	if apierrors.IsNotFound(err) {
		return sa, true, nil
	}
	return sa, false, err
}

// missingServiceAccountError is a refusal to a ServiceAccount that does
// not exist, said as such: the API server authorizes an impersonated
// ServiceAccount by its name alone, existing or not, so its refusal names
// only the verb, which sends the reader to look for a missing RoleBinding.
type missingServiceAccountError struct {
	sa types.NamespacedName
	// byDefault: the ServiceAccount is --default-service-account's, the
	// object naming none itself.
	byDefault bool
	err       error
}

func (e *missingServiceAccountError) Error() string {
	from := "spec.serviceAccountName"
	if e.byDefault {
		from = "sync-controller's --default-service-account, as spec.serviceAccountName is empty"
	}
	return fmt.Sprintf("ServiceAccount %s does not exist (%s): create it and bind it the rights to apply these objects; %v",
		e.sa, from, e.err)
}

func (e *missingServiceAccountError) Unwrap() error { return e.err }

// explainForbidden returns err, said to be a refusal to a missing
// ServiceAccount when it is one: when the API server refused a request of
// the object's ServiceAccount and that ServiceAccount does not exist. It
// reads the ServiceAccount (uncached) only then, so a sync that is
// allowed costs no request more. A ServiceAccount that exists, or that
// cannot be read, leaves err as it is.
func (s *syncRun) explainForbidden(ctx context.Context, err error) error {
	var fe *engine.ForbiddenError
	var already *missingServiceAccountError
	if err == nil || !errors.As(err, &fe) || errors.As(err, &already) {
		return err
	}
	sa, ok := serviceAccountOf(s.app, s.r.DefaultServiceAccount)
	if !ok || fe.User != engine.ServiceAccountUser(sa) {
		return err
	}
	if _, gone, getErr := s.r.serviceAccountGone(ctx, s.app); getErr != nil || !gone {
		return err
	}
	return &missingServiceAccountError{sa: sa, byDefault: s.spec.ServiceAccountName == "", err: err}
}
