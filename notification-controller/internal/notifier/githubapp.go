package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/githubapp"
)

// githubAppTypes are the Provider types that may authenticate as a GitHub
// App instead of with a token, as in Flux: those that write to GitHub.
var githubAppTypes = map[string]bool{
	notificationv1.GitHubProvider:                   true,
	notificationv1.GitHubDispatchProvider:           true,
	notificationv1.GitHubPullRequestCommentProvider: true,
}

// githubAppOf reads a GitHub App from a Provider's Secret when the Secret
// has the App's ID (githubapp's keys), or returns nil. An App's Secret of
// another type is an error rather than a Secret whose keys are ignored.
func githubAppOf(typ string, s *corev1.Secret) (*githubapp.App, error) {
	if _, ok := s.Data[githubapp.AppIDKey]; !ok {
		return nil, nil
	}
	if !githubAppTypes[typ] {
		return nil, fmt.Errorf("secret %s/%s holds a GitHub App (%s), which a %s provider cannot use", s.Namespace, s.Name, githubapp.AppIDKey, typ)
	}
	app, err := githubapp.FromSecret(s.Data)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return &app, nil
}

// orGitHubApp is what a Secret of typ may hold instead of a token, for
// the error that says neither is there.
func orGitHubApp(typ string) string {
	if !githubAppTypes[typ] {
		return ""
	}
	return fmt.Sprintf(" nor a GitHub App's %s, %s and %s", githubapp.AppIDKey, githubapp.InstallationIDKey, githubapp.PrivateKeyKey)
}

// AuthenticateApp gives a Config whose Secret holds a GitHub App its
// installation token (cfg.Token) and, for a comment provider, the login
// GitHub gives what the App writes (cfg.AppLogin: an installation token
// has no user behind GET /user). Both come through cfg's own client — the
// Provider's proxy and CA, the dispatcher's address policy — and tokens
// caches them, so the dispatcher, which rebuilds a notifier every few
// seconds, mints one an hour. A Config without an App is left as it is.
func AuthenticateApp(ctx context.Context, cfg *Config, tokens *githubapp.Tokens) error {
	if cfg.GitHubApp == nil {
		return nil
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	if cfg.TLS != nil || cfg.Proxy != nil {
		c, err := cfg.ownClient()
		if err != nil {
			return &PermanentError{Err: err}
		}
		client = c
	}
	token, err := tokens.Token(ctx, *cfg.GitHubApp, client)
	if err != nil {
		return appError(cfg.Type, err)
	}
	cfg.Token = token
	if cfg.Type == notificationv1.GitHubPullRequestCommentProvider {
		if cfg.AppLogin, err = tokens.Login(ctx, *cfg.GitHubApp, client); err != nil {
			return appError(cfg.Type, err)
		}
	}
	return nil
}

// appError keeps only the status code of GitHub's refusal, as for every
// host's answer (its words are never repeated into events or status), and
// makes a 4xx, which retrying does not fix, permanent.
func appError(typ string, err error) error {
	var refused *githubapp.RefusedError
	if !errors.As(err, &refused) {
		return fmt.Errorf("the %s provider's GitHub App: %w", typ, err)
	}
	err = fmt.Errorf("the GitHub API answered %d %s to the %s provider's GitHub App: check %s, %s and %s",
		refused.Code, http.StatusText(refused.Code), typ, githubapp.AppIDKey, githubapp.InstallationIDKey, githubapp.PrivateKeyKey)
	if refused.Code >= 400 && refused.Code < 500 && refused.Code != http.StatusTooManyRequests {
		return &PermanentError{Err: err}
	}
	return err
}
