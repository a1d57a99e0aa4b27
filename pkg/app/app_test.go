package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

func TestFlowControlled(t *testing.T) {
	g := NewWithT(t)
	withAPF := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Expect(r.URL.Path).To(Equal("/livez/ping"))
		w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "f0f4fd0e")
		w.WriteHeader(http.StatusNotFound)
	}))
	defer withAPF.Close()
	without := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer without.Close()

	g.Expect(FlowControlled(&rest.Config{Host: withAPF.URL})).To(BeTrue())
	g.Expect(FlowControlled(&rest.Config{Host: without.URL})).To(BeFalse())
	g.Expect(FlowControlled(&rest.Config{Host: "http://127.0.0.1:1"})).To(BeFalse(), "unreachable counts as not flow-controlled")
}
