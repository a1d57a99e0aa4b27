package receiver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TokenKey is the key of the token in a Receiver's Secret.
const TokenKey = "token"

// ErrSecretNotFound is a Secret or key that does not exist; other errors (the API
// server failing) may pass.
var ErrSecretNotFound = errors.New("not found")

// secretToken returns the non-empty "token" key of the Secret namespace/name,
// read with one GET by name.
func secretToken(ctx context.Context, r client.Reader, namespace, name string) (string, error) {
	var s corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("secret %s/%s %w", namespace, name, ErrSecretNotFound)
		}
		return "", fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	token := s.Data[TokenKey]
	if len(token) == 0 {
		return "", &missingKeyError{fmt.Sprintf("secret %s/%s has no key %q", namespace, name, TokenKey)}
	}
	return string(token), nil
}

type missingKeyError struct{ msg string }

func (e *missingKeyError) Error() string        { return e.msg }
func (e *missingKeyError) Is(target error) bool { return target == ErrSecretNotFound }
