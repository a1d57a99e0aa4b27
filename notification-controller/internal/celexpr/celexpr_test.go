package celexpr

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFluxExpressions: Flux's documented examples compile with their
// variables and give what Flux's do.
func TestFluxExpressions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	res := map[string]any{"metadata": map[string]any{"name": "hello-world", "annotations": map[string]any{"update-image": "hello-world"}}}
	req := map[string]any{"tag": "us-east1-docker.pkg.dev/my-project/my-repo/hello-world:1.1"}
	for expr, want := range map[string]bool{
		`req.tag.contains(res.metadata.name)`: true,
		`has(res.metadata.annotations) && req.tag.split('/').last().value().split(":").first().value() == res.metadata.annotations['update-image']`: true,
		`res.metadata.name == 'other'`: false,
	} {
		p, err := Compile(expr, Bool, "res", "req")
		g.Expect(err).NotTo(HaveOccurred(), expr)
		got, err := p.Bool(ctx, map[string]any{"res": res, "req": req})
		g.Expect(err).NotTo(HaveOccurred(), expr)
		g.Expect(got).To(Equal(want), expr)
	}

	p, err := Compile(`event.involvedObject.kind + '/' + event.involvedObject.name + '/' + provider.metadata.uid.split('-').first().value()`, String, "event", "alert", "provider")
	g.Expect(err).NotTo(HaveOccurred())
	id, err := p.String(ctx, map[string]any{
		"event":    map[string]any{"involvedObject": map[string]any{"kind": "Kustomization", "name": "apps"}},
		"alert":    map[string]any{},
		"provider": map[string]any{"metadata": map[string]any{"uid": "0c9c2e41-d2f9-4f9b-9c41-1d0a5c6d3b6a"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(Equal("Kustomization/apps/0c9c2e41"))
}

// TestRefusedExpressions: what cannot give the result is refused when
// compiled, naming the expression; what only turns out wrong on the data
// fails the evaluation.
func TestRefusedExpressions(t *testing.T) {
	g := NewWithT(t)
	_, err := Compile(`res.metadata.name ==`, Bool, "res", "req")
	g.Expect(err).To(MatchError(ContainSubstring(`"res.metadata.name ==" does not compile`)))
	_, err = Compile(`claims.sub == 'x'`, Bool, "res", "req")
	g.Expect(err).To(MatchError(ContainSubstring("undeclared reference to 'claims'")))
	_, err = Compile(`'a string'`, Bool, "res", "req")
	g.Expect(err).To(MatchError(`"'a string'" gives a string, not a bool`))
	_, err = Compile(`1 == 1`, String, "event")
	g.Expect(err).To(MatchError(`"1 == 1" gives a bool, not a string`))
	_, err = Compile(strings.Repeat("a", MaxLength+1), Bool, "res")
	g.Expect(err).To(HaveOccurred())

	p, err := Compile(`res.metadata.name`, Bool, "res")
	g.Expect(err).NotTo(HaveOccurred(), "dyn may be a bool")
	_, err = p.Bool(context.Background(), map[string]any{"res": map[string]any{"metadata": map[string]any{"name": "x"}}})
	g.Expect(err).To(MatchError("gave a string, not a bool"))
	_, err = p.Bool(context.Background(), map[string]any{"res": map[string]any{}})
	g.Expect(err).To(MatchError(ContainSubstring("no such key: metadata")))
}

// TestEvaluationIsBounded: an expression that loops over a large body
// stops at the cost limit, and one whose context ends stops too.
func TestEvaluationIsBounded(t *testing.T) {
	g := NewWithT(t)
	items := make([]any, 5000)
	for i := range items {
		items[i] = "x"
	}
	req := map[string]any{"items": items}
	p, err := Compile(`req.items.all(a, req.items.all(b, a == b))`, Bool, "req")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Bool(context.Background(), map[string]any{"req": req})
	g.Expect(err).To(MatchError(ContainSubstring("actual cost limit exceeded")))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err = Compile(`req.items.exists(a, a == 'y')`, Bool, "req")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Bool(ctx, map[string]any{"req": req})
	g.Expect(err).To(MatchError(ContainSubstring("interrupted")))
}
