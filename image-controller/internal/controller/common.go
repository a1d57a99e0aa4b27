package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/image-controller/internal/registry"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/metrics"
	"plumb.dev/pkg/netguard"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// ControllerName is image-controller's name: its events' reporting
// controller, its Lease's and its field manager's.
const ControllerName = kinds.ImageController

// FieldManager owns the status fields image-controller writes.
var FieldManager = kinds.FieldManager(kinds.ImageController)

// defaultRequeueDependency is how soon a policy waiting for its
// repository's tags is looked at again, unless --requeue-dependency says
// otherwise.
const defaultRequeueDependency = 10 * time.Second

func requeueDependency(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return defaultRequeueDependency
}

// skeleton is the reconcile skeleton of one image kind: Ready speaks for
// the result, failures are retried with controller-runtime's backoff or
// their own poll, and the status is applied whole as FieldManager when it
// changed.
func skeleton[T plumbreconcile.Object](c client.Client, ev *events.Recorder, m *metrics.Object, defaultReason string, ready func(T) string) *plumbreconcile.Controller[T] {
	return &plumbreconcile.Controller[T]{
		Condition:     meta.ReadyCondition,
		DefaultReason: defaultReason,
		Events:        ev,
		Metrics:       m,
		Succeeded:     ready,
		OwnedStatus:   func(obj T) any { return statusOf(obj) },
		Client:        c,
		FieldManager:  FieldManager,
	}
}

func statusOf(obj any) any {
	switch o := obj.(type) {
	case *imagev1.ImageRepository:
		return &o.Status
	case *imagev1.ImagePolicy:
		return &o.Status
	case *imagev1.ImageUpdateAutomation:
		return &o.Status
	}
	panic(fmt.Sprintf("no status for %T", obj))
}

// Connection is how image-controller reaches registries, the same for
// every ImageRepository: where it may connect and how much it reads.
type Connection struct {
	// Addresses is the address policy (--allowed-private-networks); the
	// zero policy refuses every loopback and private address.
	Addresses netguard.Policy
	// Limits bound every scan (--max-tags, --max-tag-pages,
	// --max-response-size).
	Limits registry.Limits
}

// errCredentials marks a Secret of the repository that is missing or
// unusable.
var errCredentials = errors.New("credentials")

// client returns a registry client for repo with its Secrets, read with
// c in repo's namespace.
func (conn Connection) client(ctx context.Context, c client.Reader, repo *imagev1.ImageRepository) (*registry.Client, error) {
	o := registry.Options{Insecure: repo.Spec.Insecure, Addresses: conn.Addresses, Limits: conn.Limits}
	if ref := repo.Spec.SecretRef; ref != nil {
		s, err := secret(ctx, c, repo.Namespace, ref.Name, "spec.secretRef")
		if err != nil {
			return nil, err
		}
		b, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, fmt.Errorf("%w: spec.secretRef: Secret %s/%s has no %s", errCredentials, repo.Namespace, ref.Name, corev1.DockerConfigJsonKey)
		}
		o.DockerConfig = b
	}
	if ref := repo.Spec.CertSecretRef; ref != nil {
		s, err := secret(ctx, c, repo.Namespace, ref.Name, "spec.certSecretRef")
		if err != nil {
			return nil, err
		}
		if o.TLS, err = registry.TLSConfig(s.Data); err != nil {
			return nil, err
		}
	}
	return registry.NewClient(repo.Spec.Image, o)
}

func secret(ctx context.Context, c client.Reader, namespace, name, field string) (*corev1.Secret, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s: Secret %s/%s not found", errCredentials, field, namespace, name)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return &s, nil
}

// registryFailure is what a failed registry request means: its reason
// and whether retrying helps. A list over the tag limits is polled every
// interval (the repository may shrink); a bad image name or a Secret
// that the spec must change stalls.
func registryFailure(err error, interval time.Duration) *plumbreconcile.Error {
	msg := errors.New(message.StripUserInfo(err.Error()))
	switch {
	case errors.Is(err, errCredentials), registry.KindOf(err) == registry.AuthFailed:
		return plumbreconcile.Failed(sourcev1.AuthenticationFailedReason, msg)
	case registry.KindOf(err) == registry.InvalidSpec:
		return plumbreconcile.Stalled(meta.InvalidSpecReason, msg)
	case registry.KindOf(err) == registry.TooManyTags:
		return plumbreconcile.Stalled(imagev1.TagLimitExceededReason, msg).Polling(interval)
	}
	return plumbreconcile.Failed(imagev1.ReadOperationFailedReason, msg)
}
