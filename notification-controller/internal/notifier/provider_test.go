package notifier

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
)

// TestConfigForChatDefaults: a slack Secret with a token and no address
// posts to chat.postMessage; one with neither still names the missing
// address; Telegram and Webex default to their public APIs;
// spec.threadPerObject is read.
func TestConfigForChatDefaults(t *testing.T) {
	secret := func(name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	r := fake.NewClientBuilder().WithObjects(
		secret("bot", map[string]string{"token": "xoxb-1"}),
		secret("empty", map[string]string{"username": "x"}),
	).Build()
	provider := func(typ, secret string) *notificationv1.Provider {
		return &notificationv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
			Spec: notificationv1.ProviderSpec{Type: typ, Channel: "#deploys", ThreadPerObject: true,
				SecretRef: &meta.LocalObjectReference{Name: secret}},
		}
	}
	g := NewWithT(t)
	cfg, err := ConfigFor(context.Background(), r, provider(notificationv1.SlackProvider, "bot"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Address).To(Equal(SlackPostMessageURL))
	g.Expect(cfg.ThreadPerObject).To(BeTrue())

	_, err = ConfigFor(context.Background(), r, provider(notificationv1.SlackProvider, "empty"))
	g.Expect(err).To(MatchError(`secret ns/empty has no key "address" and spec.address is empty`))

	for typ, want := range map[string]string{notificationv1.TelegramProvider: TelegramAPI, notificationv1.WebexProvider: WebexMessagesURL} {
		cfg, err := ConfigFor(context.Background(), r, provider(typ, "bot"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Address).To(Equal(want))
	}
}

// TestConfigForNeedsToken: a Provider of a type that cannot work without
// a token, whose Secret has no token key, is reported by ConfigFor (a
// Secret not ready, retried) rather than by New; without a Secret at all,
// ConfigFor says the Provider needs one. The same Secret with the token is
// taken.
func TestConfigForNeedsToken(t *testing.T) {
	r := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "no-token"}, Data: map[string][]byte{"username": []byte("bot")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "token"}, Data: map[string][]byte{"token": []byte("user:t0ken")}},
	).Build()
	for typ, what := range map[string]string{
		notificationv1.TelegramProvider:       "a Telegram bot token",
		notificationv1.MatrixProvider:         "a Matrix access token",
		notificationv1.WebexProvider:          "a Webex bot's access token",
		notificationv1.GitHubProvider:         "a GitHub token that may write commit statuses",
		notificationv1.GitHubDispatchProvider: "a GitHub token that may write commit statuses",
		notificationv1.GitLabProvider:         "a GitLab access token with the api scope",
		notificationv1.GiteaProvider:          "a Gitea access token with write access to the repository",
		notificationv1.BitbucketProvider:      "<username>:<app password>",
		notificationv1.AzureDevOpsProvider:    "a personal access token with the Code (status) scope",
		notificationv1.ZoomProvider:           "the verification token of a Zoom Incoming Webhook connection",
		notificationv1.IncidentioProvider:     "the API token of an incident.io HTTP alert source",

		notificationv1.GitHubPullRequestCommentProvider:  "a GitHub token that may write pull request comments",
		notificationv1.GitLabMergeRequestCommentProvider: "a GitLab access token with the api scope",
		notificationv1.GiteaPullRequestCommentProvider:   "a Gitea access token with the write:issue and read:user scopes",
	} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			provider := func(secret string) *notificationv1.Provider {
				p := &notificationv1.Provider{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
					Spec:       notificationv1.ProviderSpec{Type: typ, Address: "https://git.example.com/org/repo", Channel: "!room:example.org"},
				}
				if secret != "" {
					p.Spec.SecretRef = &meta.LocalObjectReference{Name: secret}
				}
				return p
			}
			_, err := ConfigFor(context.Background(), r, provider("no-token"))
			g.Expect(err).To(MatchError(`secret ns/no-token has no key "token" (` + what + `)` + orGitHubApp(typ)))
			_, err = ConfigFor(context.Background(), r, provider(""))
			g.Expect(err).To(MatchError(`a Provider of type ` + typ + ` needs spec.secretRef with the key "token" (` + what + `)`))
			cfg, err := ConfigFor(context.Background(), r, provider("token"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Token).To(Equal("user:t0ken"))
		})
	}
}
