package inspect

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// TestArtifactThroughServiceProxy: an artifact URL naming an in-cluster
// Service is fetched through the API server's service proxy path, with the
// API server's credentials; other URLs go direct. The httptest server
// stands in for the API server's proxy endpoint (envtest has no Pods to
// proxy to).
func TestArtifactThroughServiceProxy(t *testing.T) {
	g := NewWithT(t)
	var gotPath, gotAuth string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		_, _ = w.Write([]byte("manifests"))
	}))
	defer api.Close()
	hc, err := ArtifactClient(&rest.Config{Host: api.URL, BearerToken: "secret-token"})
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Get("http://render-controller.plumb-system.svc.cluster.local./kustomization/team-a/app/abc.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(gotPath).To(Equal("/api/v1/namespaces/plumb-system/services/http:render-controller:80/proxy/kustomization/team-a/app/abc.yaml"))
	g.Expect(gotAuth).To(Equal("Bearer secret-token"))

	for host, want := range map[string][2]string{
		"render-controller.plumb-system.svc":                {"render-controller", "plumb-system"},
		"render-controller.plumb-system.svc.cluster.local":  {"render-controller", "plumb-system"},
		"render-controller.plumb-system.svc.cluster.local.": {"render-controller", "plumb-system"},
		"127.0.0.1":             {},
		"artifacts.example.com": {},
		"a.b.svc.example.com":   {},
	} {
		svc, ns, ok := InClusterService(host)
		g.Expect(ok).To(Equal(want[0] != ""), host)
		g.Expect([2]string{svc, ns}).To(Equal(want), host)
	}
}

// FuzzInClusterService: artifact URLs come from a status field anyone with
// write access to it can set; only <svc>.<ns>.svc[.cluster.local] may go to
// the service proxy, and the parts must be single DNS labels.
func FuzzInClusterService(f *testing.F) {
	for _, s := range []string{
		"render-controller.plumb-system.svc.cluster.local.", "a.b.svc", "a.b.svc.evil.com",
		"127.0.0.1", "", ".svc", "a..svc", "x.y.svc.cluster.local.extra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		svc, ns, ok := InClusterService(host)
		if !ok {
			return
		}
		h := strings.TrimSuffix(host, ".")
		if !strings.HasPrefix(h, svc+"."+ns+".svc") || strings.Contains(svc, ".") || strings.Contains(ns, ".") {
			t.Fatalf("%q split into service %q, namespace %q", host, svc, ns)
		}
		rest := strings.TrimPrefix(h, svc+"."+ns+".svc")
		if rest != "" && rest != ".cluster.local" {
			t.Fatalf("%q accepted with trailing %q", host, rest)
		}
	})
}
