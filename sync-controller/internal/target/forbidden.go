package target

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"plumb.dev/sync-controller/internal/engine"
)

// ServiceAccountGone reports whether req acts as a ServiceAccount of this
// cluster that no longer exists (read as sync-controller, uncached): a
// deletion then can prune nothing in its name.
func (r *Resolver) ServiceAccountGone(ctx context.Context, req Request) (ServiceAccount, bool, error) {
	sa := r.serviceAccountOf(req)
	if req.KubeConfig != nil {
		return sa, false, nil
	}
	return r.gone(ctx, Target{ServiceAccount: sa})
}

// gone reports whether t's ServiceAccount does not exist. A remote
// cluster's ServiceAccount is not read: its API server refuses what the
// impersonated user may not do.
func (r *Resolver) gone(ctx context.Context, t Target) (ServiceAccount, bool, error) {
	sa := t.ServiceAccount
	if !sa.Named() || t.Cluster.Remote() {
		return sa, false, nil
	}
	err := r.Reader.Get(ctx, sa.NamespacedName, &corev1.ServiceAccount{})
	if apierrors.IsNotFound(err) {
		return sa, true, nil
	}
	return sa, false, err
}

// ExplainForbidden returns err, said to be a refusal to a missing
// ServiceAccount when it is one: when the API server refused a request of
// t's ServiceAccount and that ServiceAccount does not exist. It reads the
// ServiceAccount (uncached) only then, so a sync that is allowed costs no
// request more. A ServiceAccount that exists, or that cannot be read,
// leaves err as it is.
func (r *Resolver) ExplainForbidden(ctx context.Context, t Target, err error) error {
	var fe *engine.ForbiddenError
	var already *missingServiceAccountError
	if err == nil || !errors.As(err, &fe) || errors.As(err, &already) {
		return err
	}
	if !t.ServiceAccount.Named() || fe.User != engine.ServiceAccountUser(t.ServiceAccount.NamespacedName) {
		return err
	}
	if _, gone, getErr := r.gone(ctx, t); getErr != nil || !gone {
		return err
	}
	return &missingServiceAccountError{sa: t.ServiceAccount, err: err}
}

// missingServiceAccountError is a refusal to a ServiceAccount that does
// not exist, said as such: the API server authorizes an impersonated
// ServiceAccount by its name alone, existing or not, so its refusal names
// only the verb, which sends the reader to look for a missing RoleBinding.
type missingServiceAccountError struct {
	sa  ServiceAccount
	err error
}

func (e *missingServiceAccountError) Error() string {
	from := "spec.serviceAccountName"
	if e.sa.ByDefault {
		from = "sync-controller's --default-service-account, as spec.serviceAccountName is empty"
	}
	return fmt.Sprintf("ServiceAccount %s does not exist (%s): create it and bind it the rights to apply these objects; %v",
		e.sa.NamespacedName, from, e.err)
}

func (e *missingServiceAccountError) Unwrap() error { return e.err }
