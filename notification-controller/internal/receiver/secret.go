package receiver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
)

// Keys of a Receiver's Secret.
const (
	// TokenKey holds the token every type needs: it is part of the webhook
	// path, and signs or authenticates the calls of most types.
	TokenKey = "token"
	// EmailKey (gcr) is the service account whose Google-signed ID token
	// Pub/Sub sends: a token for any other account is refused.
	EmailKey = "email"
	// AudienceKey (gcr) is the audience the push subscription puts in its
	// ID token (usually the webhook URL): a token for another is refused.
	AudienceKey = "audience"
)

// Credentials are what a Receiver's Secret holds for verifying its calls.
type Credentials struct {
	Token string
	// Email and Audience are set for gcr only.
	Email, Audience string
}

// ErrSecretNotFound is a Secret or key that does not exist; other errors (the API
// server failing) may pass.
var ErrSecretNotFound = errors.New("not found")

// readSecret reads the Secret namespace/name with one GET by name and
// returns the non-empty values of the keys the Receiver type needs.
func readSecret(ctx context.Context, r client.Reader, typ, namespace, name string) (Credentials, error) {
	var s corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return Credentials{}, fmt.Errorf("secret %s/%s %w", namespace, name, ErrSecretNotFound)
		}
		return Credentials{}, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	keys := []string{TokenKey}
	if typ == notificationv1.GCRReceiver {
		keys = append(keys, EmailKey, AudienceKey)
	}
	for _, k := range keys {
		if len(s.Data[k]) == 0 {
			msg := fmt.Sprintf("secret %s/%s has no key %q", namespace, name, k)
			if k != TokenKey {
				msg += " (a gcr receiver checks the ID tokens of its calls against it)"
			}
			return Credentials{}, &missingKeyError{msg}
		}
	}
	return Credentials{Token: string(s.Data[TokenKey]), Email: string(s.Data[EmailKey]), Audience: string(s.Data[AudienceKey])}, nil
}

type missingKeyError struct{ msg string }

func (e *missingKeyError) Error() string        { return e.msg }
func (e *missingKeyError) Is(target error) bool { return target == ErrSecretNotFound }
