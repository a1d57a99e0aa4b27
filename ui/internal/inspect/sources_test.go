package inspect

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// An object's page names its source of the kind its sourceRef says, with
// that source's URL and revision: a Kustomization's OCIRepository, not a
// GitRepository of the same name; a HelmChart's GitRepository, not a
// HelmRepository of the same name.
func TestAPageNamesItsSourceOfTheKindItsSourceRefSays(t *testing.T) {
	revision := "v1@sha256:" + strings.Repeat("ab", 32)
	artifact := &meta.Artifact{Path: "p", URL: "http://example/p", Revision: revision, LastUpdateTime: metav1.Now()}
	interval := metav1.Duration{Duration: time.Minute}
	for _, tc := range []struct {
		name     string
		objects  func(ns string) (source, referrer client.Object)
		stored   func(ctx context.Context, t *testing.T, source client.Object)
		path     string
		wantKind string
		wantURL  string
	}{
		{
			name: "Kustomization", path: "kustomization/%s/app",
			objects: func(ns string) (client.Object, client.Object) {
				return &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
						Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.example/org/app", Interval: interval}},
					&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
						Spec: kustomizev1.KustomizationSpec{Interval: interval,
							SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"}}}
			},
			stored: func(ctx context.Context, t *testing.T, source client.Object) {
				setStatus(ctx, t, source.(*sourcev1.OCIRepository), func(o *sourcev1.OCIRepository) { o.Status.Artifact = artifact })
			},
			wantKind: sourcev1.OCIRepositoryKind, wantURL: "oci://registry.example/org/app",
		},
		{
			name: "HelmChart", path: "helmchart/%s/podinfo",
			objects: func(ns string) (client.Object, client.Object) {
				return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
						Spec: sourcev1.GitRepositorySpec{URL: "https://git.example/org/charts", Interval: interval}},
					&sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
						Spec: sourcev1.HelmChartSpec{Chart: "charts/podinfo", Interval: interval,
							SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "charts"}}}
			},
			stored: func(ctx context.Context, t *testing.T, source client.Object) {
				setStatus(ctx, t, source.(*sourcev1.GitRepository), func(o *sourcev1.GitRepository) { o.Status.Artifact = artifact })
			},
			wantKind: sourcev1.GitRepositoryKind, wantURL: "https://git.example/org/charts",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, ns := newNamespace(t)
			srv := newServer(t)
			source, referrer := tc.objects(ns)
			create(ctx, t, source, referrer)
			tc.stored(ctx, t, source)

			r := do(t, srv, http.MethodGet, "/api/objects/"+fmt.Sprintf(tc.path, ns), "", "")
			g.Expect(r.status).To(Equal(http.StatusOK), r.String())
			var page objectPage
			r.decode(t, &page)
			g.Expect(page.Sources).To(HaveLen(1))
			g.Expect(page.Sources[0].Kind).To(Equal(tc.wantKind))
			g.Expect(page.Sources[0].Error).To(BeEmpty())
			g.Expect(page.Sources[0].Revision).To(Equal(revision))
			g.Expect(page.Sources[0].URL).To(Equal(tc.wantURL))
		})
	}
}
