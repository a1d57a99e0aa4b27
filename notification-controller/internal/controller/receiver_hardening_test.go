package controller

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/receiver"
)

// countingTransport counts the requests a client sends to the API server.
type countingTransport struct {
	rt http.RoundTripper
	mu sync.Mutex
	// seen lists "VERB path" of every request.
	seen []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

func (c *countingTransport) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// serve runs srv on 127.0.0.1 until the test ends and returns its URL.
func serve(t *testing.T, srv *receiver.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receiver server: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

func postTo(t *testing.T, url string, header map[string]string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// TestForgedWebhooksCostNoAPIRequests is the load test of the receiver: a
// server whose every API request is counted takes 600 forged calls from 16
// clients at once — unknown paths, and a real Receiver's path with a wrong
// signature, a missing one, or a body over the limit — and makes no API
// request for any of them: the path is looked up and the signature checked
// against tokens held in memory. A genuine call then does make requests
// (the annotation patch), which shows the counter counts.
func TestForgedWebhooksCostNoAPIRequests(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	app := gitRepository(t, ns, "app", nil, true)
	rcv := createReceiver(t, ns, "load", notificationv1.GitHubReceiver, nil)

	counting := &countingTransport{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counting.rt = rt; return counting })
	// Reads of Receivers come from the manager's cache, as in main.go;
	// everything else goes through the counting transport.
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	g.Expect(err).NotTo(HaveOccurred())
	reader, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	url := serve(t, &receiver.Server{
		Client: c, Reader: reader, Tokens: tokens, MaxConcurrent: 64,
		NoCrossNamespaceRefs: true, Log: logr.Discard(),
	})

	push := []byte(`{"ref":"refs/heads/main"}`)
	random := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	type call struct {
		path   string
		header map[string]string
		body   []byte
	}
	var calls []call
	for i := range 150 {
		calls = append(calls,
			call{"/hook/" + random(), map[string]string{"X-GitHub-Event": "push"}, push},
			call{rcv.Status.WebhookPath, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + random()}, push},
			call{rcv.Status.WebhookPath, map[string]string{"X-GitHub-Event": "push"}, push},
		)
		if i%3 == 0 {
			calls = append(calls, call{rcv.Status.WebhookPath, nil, bytes.Repeat([]byte("x"), receiver.MaxBodySize+1)})
		} else {
			// A signature made with a token one byte off.
			mac := sign(sha256.New, "sha256", push)
			calls = append(calls, call{rcv.Status.WebhookPath, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": mac[:len(mac)-1] + "0"}, push})
		}
	}
	g.Expect(calls).To(HaveLen(600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := make(chan call)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 16 {
		wg.Go(func() {
			for c := range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+c.path, bytes.NewReader(c.body))
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	for _, c := range calls {
		work <- c
	}
	close(work)
	wg.Wait()
	g.Expect(failures.Load()).To(BeZero(), "every call answered before the deadline")
	g.Expect(codes).To(Equal(map[int]int{
		http.StatusNotFound:              150,
		http.StatusUnauthorized:          400,
		http.StatusRequestEntityTooLarge: 50,
	}))
	g.Expect(counting.requests()).To(BeEmpty(), "forged calls made API requests")
	g.Expect(requestedAt(t, app)).To(BeEmpty())

	code, msg := postTo(t, url+rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(sha256.New, "sha256", push)}, bytes.NewReader(push))
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(counting.requests()).To(ContainElement("PATCH /apis/source.plumb.dev/v1/namespaces/"+ns+"/gitrepositories/app"),
		"a genuine call is counted")
}

// TestReceiverLimits: one Receiver takes --receiver-burst calls, then 429,
// while another Receiver is not affected; the server handles
// --receiver-max-concurrent calls at once and answers 429 to the next.
func TestReceiverLimits(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	busy := createReceiver(t, ns, "busy", notificationv1.GenericHMACReceiver, nil)
	quiet := createReceiver(t, ns, "quiet", notificationv1.GenericHMACReceiver, nil)

	// Tokens of this test's own, with a burst of 3 and next to no refill.
	own := &receiver.Tokens{Rate: 1e-6, Burst: 3}
	loader := &receiver.TokenLoader{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own, RefreshInterval: time.Hour}
	for _, r := range []*notificationv1.Receiver{busy, quiet} {
		_, err := loader.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(r)})
		g.Expect(err).NotTo(HaveOccurred())
	}
	url := serve(t, &receiver.Server{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own, MaxConcurrent: 1, Log: logr.Discard()})

	// A call whose body has not arrived holds the one slot (holdCall
	// returns once its handler asked for the body)...
	held := holdCall(t, url, busy.Status.WebhookPath, 2)
	// ...so the next call is refused before anything else is looked at
	// (an unknown path, so that no Receiver's budget is spent).
	code, msg := postTo(t, url+"/hook/unknown", nil, nil)
	g.Expect(fmt.Sprint(code, " ", msg)).To(Equal("429 too many concurrent calls\n"))
	code, msg = held.finish("{}")
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)

	// busy used one of its three calls; two more, then 429.
	for range 2 {
		code, msg := postTo(t, url+busy.Status.WebhookPath, nil, nil)
		g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
	}
	code, msg = postTo(t, url+busy.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusTooManyRequests), msg)
	g.Expect(msg).To(Equal("rate limit of this receiver exceeded\n"))
	// quiet has its own budget.
	code, msg = postTo(t, url+quiet.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
}

// TestShortTokenIsRefused: a token under 32 bytes makes the Receiver
// Ready=False, naming the Secret and the length but not the token, and no
// path serves it; a long enough token fixes it without touching the
// Receiver.
func TestShortTokenIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	secret := createSecret(t, ns, "short", map[string]string{"token": "0123456789abcdef0123456789abcde"}) // 31 bytes
	rcv := genericReceiver(ns, "short", "short")
	g.Expect(k8s.Create(ctx, rcv)).To(Succeed())
	cond := waitReady(t, rcv, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(Equal(`secret ` + ns + `/short key "token" holds 31 bytes; a webhook token must be at least 32 bytes (e.g. ` + "`openssl rand -hex 32`)"))
	g.Expect(rcv.Status.WebhookPath).To(BeEmpty())
	code, _ := post(t, receiver.WebhookPath("0123456789abcdef0123456789abcde", "short", ns), nil, nil)
	g.Expect(code).To(Equal(http.StatusNotFound))

	// The Secret is read again every --secret-refresh-interval.
	secret.StringData = map[string]string{"token": hookToken}
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	waitReady(t, rcv, metav1.ConditionTrue)
	waitServed(t, tokens, rcv)
	g.Expect(rcv.Status.WebhookPath).To(Equal(receiver.WebhookPath(hookToken, "short", ns)))
	code, msg := post(t, rcv.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)
}

// TestRotatedTokenTakesEffect: a new token in the Secret moves the
// Receiver to a new path within --secret-refresh-interval, with no watch
// on Secrets; the old path is then unknown.
func TestRotatedTokenTakesEffect(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	rcv := createReceiver(t, ns, "rotate", notificationv1.GenericReceiver, nil)
	old := rcv.Status.WebhookPath
	code, msg := post(t, old, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)

	var secret corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rotate-token"}, &secret)).To(Succeed())
	rotated := strings.Repeat("r", 40)
	secret.Data = map[string][]byte{"token": []byte(rotated)}
	g.Expect(k8s.Update(ctx, &secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rcv), rcv)).To(Succeed())
		g.Expect(rcv.Status.WebhookPath).To(Equal(receiver.WebhookPath(rotated, "rotate", ns)))
	}, timeout, poll).Should(Succeed())
	waitServed(t, tokens, rcv)
	code, msg = post(t, rcv.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	code, _ = post(t, old, nil, nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
}

// TestCrossNamespaceResourcesAreRefused: under --no-cross-namespace-refs a
// Receiver naming another namespace's object is Ready=False with reason
// CrossNamespaceRef, and a signed call to it changes nothing there.
func TestCrossNamespaceResourcesAreRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	theirs := gitRepository(t, other, "theirs", nil, true)
	createSecret(t, ns, "cross-token", map[string]string{"token": hookToken})
	rcv := genericReceiver(ns, "cross", "cross-token")
	rcv.Spec.Resources = append(rcv.Spec.Resources, notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "theirs", Namespace: other})
	g.Expect(k8s.Create(ctx, rcv)).To(Succeed())
	cond := waitReady(t, rcv, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.CrossNamespaceRefReason))
	g.Expect(cond.Message).To(Equal(fmt.Sprintf("cross-namespace references are not allowed: spec.resources[1] names namespace %q, outside %s", other, ns)))
	g.Expect(rcv.Status.Conditions).To(ContainElement(And(
		HaveField("Type", meta.StalledCondition), HaveField("Status", metav1.ConditionTrue))))

	path := receiver.WebhookPath(hookToken, "cross", ns)
	g.Eventually(func() string { return tokens.Path(client.ObjectKeyFromObject(rcv)) }, timeout, poll).Should(Equal(path))
	code, msg := post(t, path, nil, nil)
	g.Expect(code).To(Equal(http.StatusServiceUnavailable), msg)
	g.Expect(requestedAt(t, theirs)).To(BeEmpty())
}

// TestWebhookPanicIsRecovered: a panic while handling a call (here in the
// clock the annotation takes its value from) is answered 500, counted and
// logged; the server goes on serving.
func TestWebhookPanicIsRecovered(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	app := gitRepository(t, ns, "app", nil, true)
	rcv := createReceiver(t, ns, "panics", notificationv1.GenericReceiver, nil)
	var calls atomic.Int32
	url := serve(t, &receiver.Server{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: tokens, MaxConcurrent: 1, Log: logr.Discard(),
		Now: func() time.Time {
			if calls.Add(1) == 1 {
				panic("boom")
			}
			return time.Now()
		},
	})
	before := counter(t, "plumb_panics_recovered_total", map[string]string{"where": "webhook"})
	code, msg := postTo(t, url+rcv.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusInternalServerError), msg)
	g.Expect(msg).To(Equal("internal error\n"))
	g.Expect(counter(t, "plumb_panics_recovered_total", map[string]string{"where": "webhook"})).To(Equal(before + 1))
	// The slot the panicking call held is free again.
	code, msg = postTo(t, url+rcv.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(requestedAt(t, app)).NotTo(BeEmpty())
}

// heldCall is a webhook call on a connection of its own whose headers
// ask for "100 Continue": net/http sends that when the handler starts
// reading the body, so a call that has received it holds its slot and
// its share until its body arrives, and a test need not guess when.
type heldCall struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// holdCall sends the headers of a call to path on url, announcing a body
// of length bytes, and waits until the handler reads the body.
func holdCall(t *testing.T, url, path string, length int) *heldCall {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Only keeps a broken server from hanging the test.
	if err := conn.SetReadDeadline(time.Now().Add(2 * timeout)); err != nil {
		t.Fatal(err)
	}
	c := &heldCall{t: t, conn: conn, r: bufio.NewReader(conn)}
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, host, length); err != nil {
		t.Fatal(err)
	}
	if code, msg := c.answer(); code != http.StatusContinue {
		t.Fatalf("call to %s: %d %s, not 100 Continue", path, code, msg)
	}
	return c
}

// answer reads the next answer on the call's connection.
func (c *heldCall) answer() (int, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// finish sends the body and returns the answer.
func (c *heldCall) finish(body string) (int, string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, body); err != nil {
		c.t.Fatal(err)
	}
	return c.answer()
}

// TestAReceiverHoldsNoMoreThanItsShare: one Receiver, or one namespace's
// Receivers, holding calls open cannot take the other tenants' slots: its
// next call is answered 429 while another namespace's Receiver is served,
// and a body that dribbles is cut at --receiver-body-timeout, freeing its
// slot.
func TestAReceiverHoldsNoMoreThanItsShare(t *testing.T) {
	g := NewWithT(t)
	nsA, nsB := newNamespace(t), newNamespace(t)
	busy := createReceiver(t, nsA, "busy", notificationv1.GenericHMACReceiver, nil)
	neighbour := createReceiver(t, nsA, "neighbour", notificationv1.GenericHMACReceiver, nil)
	other := createReceiver(t, nsB, "other", notificationv1.GenericHMACReceiver, nil)
	own := &receiver.Tokens{Rate: 1000, Burst: 1000}
	loader := &receiver.TokenLoader{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own, RefreshInterval: time.Hour}
	for _, r := range []*notificationv1.Receiver{busy, neighbour, other} {
		_, err := loader.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(r)})
		g.Expect(err).NotTo(HaveOccurred())
	}
	// 8 slots, a quarter each: two calls per Receiver and per namespace.
	url := serve(t, &receiver.Server{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own,
		MaxConcurrent: 8, MaxShare: 0.25, BodyTimeout: time.Minute, Log: logr.Discard()})

	var held []*heldCall
	for range 2 {
		held = append(held, holdCall(t, url, busy.Status.WebhookPath, 2))
	}
	const shareFull = "429 this receiver, or its namespace, holds its share of the concurrent calls\n"
	code, msg := postTo(t, url+busy.Status.WebhookPath, nil, nil)
	g.Expect(fmt.Sprint(code, " ", msg)).To(Equal(shareFull), "busy's third call")
	code, msg = postTo(t, url+neighbour.Status.WebhookPath, nil, nil)
	g.Expect(fmt.Sprint(code, " ", msg)).To(Equal(shareFull), "the same namespace's other Receiver")
	code, msg = postTo(t, url+other.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "another namespace's Receiver is served (and its unsigned call refused): %s", msg)

	// Once busy's calls end, it has its share again.
	for _, c := range held {
		code, msg := c.finish("{}")
		g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
	}
	code, msg = postTo(t, url+busy.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
}

func TestASlowBodyIsCutAtTheBodyTimeout(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	slow := createReceiver(t, ns, "slow", notificationv1.GenericHMACReceiver, nil)
	own := &receiver.Tokens{Rate: 1000, Burst: 1000}
	loader := &receiver.TokenLoader{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own, RefreshInterval: time.Hour}
	_, err := loader.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(slow)})
	g.Expect(err).NotTo(HaveOccurred())
	url := serve(t, &receiver.Server{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: own,
		MaxConcurrent: 1, BodyTimeout: time.Second, Log: logr.Discard()})

	// A body of a byte every 200 ms, for ever: answered 408.
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer pw.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := pw.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	code, msg := postTo(t, url+slow.Status.WebhookPath, nil, pr)
	g.Expect(code).To(Equal(http.StatusRequestTimeout), msg)
	g.Expect(msg).To(Equal("the body did not arrive within 1s\n"))
	// Its slot, the server's only one, is free again.
	code, msg = postTo(t, url+slow.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
}
