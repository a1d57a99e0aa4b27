package overview

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"plumb.dev/pkg/app"
	"plumb.dev/ui/internal/access"
)

func TestAPageGivesUpOnAccessReviewsTheAPIServerDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	// An API server that takes requests and never answers: a hung or
	// partitioned one (a real kube-apiserver cannot be made to hang).
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hung.Close()
	s, err := access.NewSession(&rest.Config{Host: hung.URL}, app.NewScheme(), meta.NewDefaultRESTMapper(nil), access.ModeToken, "alice", nil)
	g.Expect(err).NotTo(HaveOccurred())
	h := &Handler{Store: storeOf(40), APITimeout: 100 * time.Millisecond}

	for path, serve := range map[string]http.HandlerFunc{"/api/overview": h.Overview, "/api/namespaces": h.Namespaces} {
		r := httptest.NewRequest(http.MethodGet, path, nil).WithContext(access.WithSession(context.Background(), s))
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			w := httptest.NewRecorder()
			serve(w, r)
			done <- w
		}()
		var w *httptest.ResponseRecorder
		g.Eventually(done, 30*time.Second).Should(Receive(&w), path)
		g.Expect(w.Code).To(Equal(http.StatusOK), path)
		var body map[string]any
		g.Expect(json.Unmarshal(w.Body.Bytes(), &body)).To(Succeed())
		if path == "/api/overview" {
			g.Expect(body).To(HaveKeyWithValue("total", 0.0), "a review not answered in time is a no")
		} else {
			g.Expect(body).To(HaveKeyWithValue("namespaces", BeEmpty()))
		}
	}
}
