package actions

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/ui/internal/access"
)

// An API server that takes requests and never answers: what a hung or
// partitioned one looks like from the UI. (A real kube-apiserver cannot
// be made to hang on purpose.)
func unansweringAPIServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	return srv
}

func TestAnActionGivesUpOnAnAPIServerThatDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	hung := unansweringAPIServer(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind), meta.RESTScopeNamespace)
	s, err := access.NewSession(&rest.Config{Host: hung.URL}, app.NewScheme(), mapper, access.ModeToken, "alice", nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer func(d time.Duration) { apiTimeout = d }(apiTimeout)
	apiTimeout = 100 * time.Millisecond

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/suspend", Suspend)
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/resume", Resume)
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/reconcile", Reconcile)
	for _, action := range []string{"suspend", "resume", "reconcile"} {
		r := httptest.NewRequest(http.MethodPost, "/api/objects/kustomization/apps/web/"+action, nil)
		r = r.WithContext(access.WithSession(context.Background(), s))
		done := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			done <- w.Code
		}()
		g.Eventually(done, 30*time.Second).Should(Receive(Equal(http.StatusGatewayTimeout)), action)
	}
}
