package receiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	notificationv1 "plumb.dev/api/notification/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// MinTokenBytes is the shortest token a Receiver may have: a shorter one
// could be guessed, and with it every signature forged.
const MinTokenBytes = 32

// ReadCredentials reads the token of a Receiver's Secret (one GET), and
// the other keys its type needs, and checks the token's length. The error
// names the Secret and key, never the value. A generic-oidc Receiver has
// no Secret: its credentials are empty (its path is then the hash of its
// name and namespace, as in Flux).
func ReadCredentials(ctx context.Context, r client.Reader, rcv *notificationv1.Receiver) (Credentials, error) {
	if rcv.Spec.Type == notificationv1.GenericOIDCReceiver {
		return Credentials{}, nil
	}
	if rcv.Spec.SecretRef == nil {
		return Credentials{}, &missingKeyError{"spec.secretRef is required for every type but generic-oidc"}
	}
	cred, err := readSecret(ctx, r, rcv.Spec.Type, rcv.Namespace, rcv.Spec.SecretRef.Name)
	if err != nil {
		return Credentials{}, err
	}
	if len(cred.Token) < MinTokenBytes {
		return Credentials{}, &ShortTokenError{Secret: rcv.Namespace + "/" + rcv.Spec.SecretRef.Name, Len: len(cred.Token)}
	}
	return cred, nil
}

// ShortTokenError is a token under MinTokenBytes.
type ShortTokenError struct {
	Secret string
	Len    int
}

func (e *ShortTokenError) Error() string {
	return fmt.Sprintf("secret %s key %q holds %d bytes; a webhook token must be at least %d bytes (e.g. `openssl rand -hex 32`)",
		e.Secret, TokenKey, e.Len, MinTokenBytes)
}

// Tokens holds, in memory, the token of every Receiver whose Secret could
// be read, by webhook path, so a call is verified without any API request.
// A TokenLoader fills it on every replica.
type Tokens struct {
	// Rate and Burst make each Receiver's rate limiter.
	Rate  rate.Limit
	Burst int

	mu       sync.RWMutex
	byPath   map[string]*entry
	pathOf   map[types.NamespacedName]string
	limiters map[types.NamespacedName]*rate.Limiter
}

type entry struct {
	receiver types.NamespacedName
	cred     Credentials
	limiter  *rate.Limiter
}

// set records the credentials of a Receiver, replacing its previous ones.
func (t *Tokens) set(key types.NamespacedName, cred Credentials) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byPath == nil {
		t.byPath, t.pathOf, t.limiters = map[string]*entry{}, map[types.NamespacedName]string{}, map[types.NamespacedName]*rate.Limiter{}
	}
	if old, ok := t.pathOf[key]; ok {
		delete(t.byPath, old)
	}
	lim, ok := t.limiters[key]
	if !ok {
		lim = rate.NewLimiter(t.Rate, t.Burst)
		t.limiters[key] = lim
	}
	path := WebhookPath(cred.Token, key.Name, key.Namespace)
	t.byPath[path] = &entry{receiver: key, cred: cred, limiter: lim}
	t.pathOf[key] = path
}

// forget drops a Receiver's token: it was deleted, or its Secret or key is
// gone.
func (t *Tokens) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pathOf[key]; ok {
		delete(t.byPath, p)
		delete(t.pathOf, key)
	}
	delete(t.limiters, key)
}

// lookup returns the entry served on path.
func (t *Tokens) lookup(path string) (*entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.byPath[path]
	return e, ok
}

// Path returns the webhook path a Receiver is served on by this replica,
// or "" when its token is not loaded.
func (t *Tokens) Path(key types.NamespacedName) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.pathOf[key]
}

// TokenLoader keeps Tokens up to date on every replica (it needs no leader
// election and writes nothing): it reads a Receiver's Secret when the
// Receiver is created, changes or is asked to reconcile
// (reconcile.plumb.dev/requestedAt), and again every RefreshInterval, since
// notification-controller may get Secrets by name but not watch them.
type TokenLoader struct {
	// Client reads Receivers from the manager's cache.
	Client client.Client
	// Reader reads Secrets, uncached (a GET by name).
	Reader          client.Reader
	Tokens          *Tokens
	RefreshInterval time.Duration
}

// SetupWithManager registers the loader as a controller of its own that
// runs on every replica.
func (l *TokenLoader) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("receiver-tokens").
		For(&notificationv1.Receiver{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, plumbreconcile.RequestedPredicate{}))).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 2}).
		Complete(l)
}

// Reconcile loads one Receiver's token. A transient error keeps the token
// it had; a missing Secret, key or a short token drops it, so the path
// answers 404 (the Receiver reconciler reports why on the Receiver).
func (l *TokenLoader) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rcv notificationv1.Receiver
	if err := l.Client.Get(ctx, req.NamespacedName, &rcv); err != nil {
		if apierrors.IsNotFound(err) {
			l.Tokens.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	cred, err := ReadCredentials(ctx, l.Reader, &rcv)
	var short *ShortTokenError
	switch {
	case err == nil:
		l.Tokens.set(req.NamespacedName, cred)
	case errors.As(err, &short) || errors.Is(err, ErrSecretNotFound):
		l.Tokens.forget(req.NamespacedName)
	default:
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plumbreconcile.Jitter(l.RefreshInterval)}, nil
}
