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
