package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// The API server refuses bad values of the fields of spec.ref.name,
// spec.sparseCheckout, spec.include and spec.proxySecretRef with a message
// naming the rule, and accepts the good ones.
func TestGitRepositoryFieldValidation(t *testing.T) {
	ns := namespace(t)
	include := func(name, from, to string) []sourcev1.GitRepositoryInclude {
		return []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: name}, FromPath: from, ToPath: to}}
	}
	tests := []struct {
		name   string
		mutate func(*sourcev1.GitRepositorySpec)
		// refused is a part of the API server's message; "" when accepted.
		refused string
	}{
		{name: "ref-name-pull", mutate: func(s *sourcev1.GitRepositorySpec) {
			s.Reference = &sourcev1.GitRepositoryRef{Name: "refs/pull/420/head"}
		}},
		{name: "ref-name-short", refused: "spec.ref.name must be a full Git reference name starting with refs/",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{Name: "main"} }},
		{name: "ref-name-dotdot", refused: "spec.ref.name must be a full Git reference name",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{Name: "refs/heads/../x"} }},
		{name: "sparse-ok", mutate: func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{"./apps", "infra/base"} }},
		{name: "sparse-absolute", refused: "spec.sparseCheckout holds directories relative to the repository root",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{"/etc"} }},
		{name: "sparse-escapes", refused: "spec.sparseCheckout holds directories relative to the repository root",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{"apps/../../x"} }},
		{name: "sparse-empty", refused: "spec.sparseCheckout[0]",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{""} }},
		{name: "sparse-too-many", refused: "must have at most 64 items",
			mutate: func(s *sourcev1.GitRepositorySpec) {
				s.SparseCheckout = strings.Split(strings.Repeat("d,", 65)[:129], ",")
			}},
		{name: "include-ok", mutate: func(s *sourcev1.GitRepositorySpec) { s.Include = include("lib", "deploy", "vendor/lib") }},
		{name: "include-no-name", refused: "spec.include[0].repository.name",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Include = include("", "", "") }},
		{name: "include-to-escapes", refused: "include toPath must be relative to the artifact's root",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Include = include("lib", "", "../other") }},
		{name: "include-to-absolute", refused: "include toPath must be relative to the artifact's root",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Include = include("lib", "", "/lib") }},
		{name: "include-from-escapes", refused: "include fromPath must be relative to the included artifact's root",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.Include = include("lib", "a/..", "") }},
		{name: "proxy-no-name", refused: "spec.proxySecretRef.name",
			mutate: func(s *sourcev1.GitRepositorySpec) { s.ProxySecretRef = &meta.LocalObjectReference{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.name},
				Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Hour},
					Suspend: true},
			}
			tt.mutate(&obj.Spec)
			err := k8s.Create(context.Background(), obj)
			if tt.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.refused))
		})
	}
}
