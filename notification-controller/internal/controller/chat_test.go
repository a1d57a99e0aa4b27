package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// slackPost is what the chat.postMessage stand-in took.
type slackPost struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts"`
	Text     string
}

// TestSlackBotTokenThreadsPerObject: a slack Provider whose Secret has a
// bot token posts through chat.postMessage with the token as a bearer
// token; with spec.threadPerObject the second event about an object is a
// reply in the thread the first started.
func TestSlackBotTokenThreadsPerObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	const token = "xoxb-suite-token"
	var (
		mu    sync.Mutex
		posts []slackPost
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var msg struct {
			Channel     string `json:"channel"`
			ThreadTS    string `json:"thread_ts"`
			Attachments []struct {
				Text string `json:"text"`
			} `json:"attachments"`
		}
		switch {
		case r.URL.Path != "/api/chat.postMessage":
			w.WriteHeader(http.StatusNotFound)
		case r.Header.Get("Authorization") != "Bearer "+token:
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		case json.NewDecoder(r.Body).Decode(&msg) != nil || msg.Channel != "#deploys" || len(msg.Attachments) != 1:
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_arguments"}`))
		default:
			mu.Lock()
			posts = append(posts, slackPost{Channel: msg.Channel, ThreadTS: msg.ThreadTS, Text: msg.Attachments[0].Text})
			ts := fmt.Sprintf("1712345678.%06d", len(posts))
			mu.Unlock()
			_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C0DEPLOYS","ts":%q,"message":{}}`, ts)
		}
	}))
	t.Cleanup(api.Close)

	createSecret(t, ns, "slack-bot", map[string]string{"address": api.URL + "/api/chat.postMessage", "token": token})
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack-bot"},
		Spec: notificationv1.ProviderSpec{
			Type:            notificationv1.SlackProvider,
			Channel:         "#deploys",
			ThreadPerObject: true,
			Timeout:         &metav1.Duration{Duration: 5 * time.Second},
			SecretRef:       &meta.LocalObjectReference{Name: "slack-bot"},
			Insecure:        true,
		},
	}
	g.Expect(k8s.Create(context.Background(), provider)).To(Succeed())
	alert := createAlert(t, ns, "threads", "slack-bot", nil)
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

	repo := gitRepository(t, ns, "podinfo", nil, false)
	controllers.Record(repo, events.SeverityInfo, "Progressing", "fetching revision main@sha1:1")
	g.Eventually(func() int { mu.Lock(); defer mu.Unlock(); return len(posts) }, timeout, poll).Should(Equal(1))
	controllers.Record(repo, events.SeverityInfo, "Succeeded", "stored artifact for revision main@sha1:1")
	waitConsumed(t, opts.ConsumerName)

	mu.Lock()
	defer mu.Unlock()
	g.Expect(posts).To(Equal([]slackPost{
		{Channel: "#deploys", Text: "fetching revision main@sha1:1"},
		{Channel: "#deploys", ThreadTS: "1712345678.000001", Text: "stored artifact for revision main@sha1:1"},
	}))
}

// TestChatProviderReadiness: what a chat Provider lacks is on its Ready
// condition without the token, and spec.threadPerObject on a type that
// cannot thread is refused by the API server.
func TestChatProviderReadiness(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, ns, "bot", map[string]string{"token": "xoxb-not-shown"})
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-channel"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.SlackProvider, SecretRef: &meta.LocalObjectReference{Name: "bot"}},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	cond := waitReady(t, p, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InvalidSpecReason))
	g.Expect(cond.Message).To(ContainSubstring("a slack provider with a bot token needs spec.channel"))
	g.Expect(cond.Message).NotTo(ContainSubstring("xoxb"))

	telegram := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "telegram"},
		Spec: notificationv1.ProviderSpec{Type: notificationv1.TelegramProvider, Channel: "-100123", ThreadPerObject: true,
			SecretRef: &meta.LocalObjectReference{Name: "bot"}},
	}
	err := k8s.Create(ctx, telegram)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.threadPerObject is for types slack (with a bot token), googlechat and zulip"))
}
