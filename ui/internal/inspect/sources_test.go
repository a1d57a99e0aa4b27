package inspect

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// A Kustomization's page names its source of the kind its sourceRef
// says: an OCIRepository with its revision, not a GitRepository of the
// same name.
func TestKustomizationPageNamesItsOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := newServer(t)
	oci := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example/org/app", Interval: metav1.Duration{Duration: time.Minute}},
	}
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"},
			Interval:  metav1.Duration{Duration: time.Minute},
		},
	}
	create(ctx, t, oci, ks)
	revision := "v1@sha256:" + strings.Repeat("ab", 32)
	setStatus(ctx, t, oci, func(o *sourcev1.OCIRepository) {
		o.Status.Artifact = &meta.Artifact{Path: "p", URL: "http://example/p", Revision: revision, LastUpdateTime: metav1.Now()}
	})

	r := do(t, srv, http.MethodGet, "/api/objects/kustomization/"+ns+"/app", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.Sources).To(HaveLen(1))
	g.Expect(page.Sources[0].Kind).To(Equal(sourcev1.OCIRepositoryKind))
	g.Expect(page.Sources[0].Error).To(BeEmpty())
	g.Expect(page.Sources[0].Revision).To(Equal(revision))
	g.Expect(page.Sources[0].URL).To(Equal("oci://registry.example/org/app"))
}
