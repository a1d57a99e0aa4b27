package controller

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testgit"
)

// TestTheUserInfoOfTheURLNeverReachesStatusOrEvents: a spec.url with
// user:password@ in it works like any other, and when the fetch fails the
// URL is named in the conditions, the Kubernetes Events and the stream's
// events (and so in alerts) without its user info, although go-git and
// net/http quote it in their errors.
func TestTheUserInfoOfTheURLNeverReachesStatusOrEvents(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	withUserInfo := func(rawURL, user, password string) string {
		return strings.Replace(rawURL, "http://", "http://"+user+":"+password+"@", 1)
	}

	// The right credentials in the URL fetch; the status names no URL.
	obj := newGitRepository(ns, "in-url", withUserInfo(repo.URL(), gitUser, gitPassword), nil, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	waitReady(t, keyOf(obj), "main@sha1:"+c1)

	const user, password = "url-user-5d1e", "url-password-c09b"
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer failing.Close()
	for name, rawURL := range map[string]string{
		"refused":     repo.URL(),                   // 401: go-git quotes the user
		"unreachable": "http://127.0.0.1:1/app.git", // net/http quotes user:***
		"broken":      failing.URL + "/app.git",     // go-git quotes user:REDACTED
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newGitRepository(ns, name, withUserInfo(rawURL, user, password), nil, &sourcev1.GitRepositoryRef{Branch: "main"})
			g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
			reason := sourcev1.GitOperationFailedReason
			if name == "refused" {
				reason = sourcev1.AuthenticationFailedReason
			}
			obj = waitFailed(t, keyOf(obj), reason)
			host := strings.TrimPrefix(rawURL, "http://")

			var texts []string
			for _, c := range obj.Status.Conditions {
				texts = append(texts, c.Type+": "+c.Message)
			}
			g.Expect(condition(obj, sourcev1.FetchFailedCondition).Message).To(ContainSubstring("http://" + host))
			for _, e := range streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, name), 1) {
				texts = append(texts, "stream event: "+e.Message)
			}
			g.Eventually(func(g Gomega) {
				var list corev1.EventList
				g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
				found := false
				for _, e := range list.Items {
					if e.InvolvedObject.Name == name {
						texts = append(texts, "Event: "+e.Message)
						found = true
					}
				}
				g.Expect(found).To(BeTrue())
			}, timeout, poll).Should(Succeed())
			for _, text := range texts {
				g.Expect(text).NotTo(Or(ContainSubstring(user), ContainSubstring(password)))
			}
		})
	}
}

// TestAnHTTPSRemoteRedirectingToHTTPIsRefused: a GitRepository asked for
// over https:// never fetches, nor sends its Secret's credentials, over
// plain HTTP. A redirect to http:// is refused before any request leaves
// for it: Ready=False and Stalled=True with reason
// InsecureConnectionsDisallowed, looked at again every interval.
func TestAnHTTPSRemoteRedirectingToHTTPIsRefused(t *testing.T) {
	g := NewWithT(t)
	var plain atomic.Int32
	clear := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plain.Add(1) }))
	defer clear.Close()
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, clear.URL+r.URL.RequestURI(), http.StatusMovedPermanently)
	}))
	defer redirector.Close()
	ns := namespace(t)
	credentials(t, ns, "https-auth", map[string]string{
		"username": gitUser, "password": gitPassword,
		"ca.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirector.Certificate().Raw})),
	})

	obj := newGitRepository(ns, "downgraded", redirector.URL+"/app.git", &meta.LocalObjectReference{Name: "https-auth"}, nil)
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	obj = waitFailed(t, keyOf(obj), meta.InsecureConnectionsDisallowedReason)
	g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring("redirected https:// to plain http://"))
	g.Expect(condition(obj, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(obj, sourcev1.FetchFailedCondition).Reason).To(Equal(meta.InsecureConnectionsDisallowedReason))
	g.Expect(plain.Load()).To(BeZero(), "a request reached the plain-HTTP server")
}
