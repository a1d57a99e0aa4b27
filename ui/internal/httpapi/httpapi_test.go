package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAnAPIErrorKeepsItsStatus(t *testing.T) {
	g := NewWithT(t)
	w := httptest.NewRecorder()
	APIError(w, apierrors.NewForbidden(schema.GroupResource{Group: "kustomize.plumb.dev", Resource: "kustomizations"}, "web", errors.New("no")))
	g.Expect(w.Code).To(Equal(http.StatusForbidden))
	g.Expect(w.Body.String()).To(ContainSubstring(`"error":"kustomizations.kustomize.plumb.dev \"web\" is forbidden: no"`))

	w = httptest.NewRecorder()
	APIError(w, errors.New("boom"))
	g.Expect(w.Code).To(Equal(http.StatusInternalServerError))
	g.Expect(w.Body.String()).To(MatchJSON(`{"error": "boom"}`))
}

func TestDecodeRefusesABodyTooLargeOrNotJSON(t *testing.T) {
	g := NewWithT(t)
	for body, want := range map[string]int{
		`{"withSource": true}`:         0,
		``:                             0,
		`not json`:                     http.StatusBadRequest,
		strings.Repeat(" ", MaxBody+1): http.StatusRequestEntityTooLarge,
	} {
		w := httptest.NewRecorder()
		var v struct{ WithSource bool }
		ok := Decode(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), &v)
		if want == 0 {
			g.Expect(ok).To(BeTrue(), body)
			continue
		}
		g.Expect(ok).To(BeFalse())
		g.Expect(w.Code).To(Equal(want))
	}
}
