package healthexpr

import (
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/utils/lru"
)

// The variables of a readyExpr, Flux's names.
const (
	// SelfVar is the object whose dependsOn holds the expression.
	SelfVar = "self"
	// DepVar is the dependency the expression judges.
	DepVar = "dep"
)

// ReadyExpr is a compiled dependsOn[].readyExpr.
type ReadyExpr struct {
	prog *program
}

// readyEnvironment is environment with self and dep declared.
var readyEnvironment = sync.OnceValues(func() (*cel.Env, error) {
	base, err := environment()
	if err != nil {
		return nil, err
	}
	return base.Extend(cel.Variable(SelfVar, cel.DynType), cel.Variable(DepVar, cel.DynType))
})

// compiledReady caches readyExprs and their errors by text, as compiled
// caches health expressions: a dependent waiting on its dependency is
// looked at again every few seconds.
var compiledReady = lru.New(cacheSize)

// CompileReady compiles a readyExpr. The error quotes the expression.
func CompileReady(expr string) (*ReadyExpr, error) {
	return cachedCompile(compiledReady, expr, buildReady)
}

// buildReady compiles expr with self and dep declared, so that another
// name, or a result that cannot be a bool, is refused here, as Flux
// refuses it, rather than failing at every evaluation.
func buildReady(expr string) (*ReadyExpr, error) {
	prog, err := newProgram(readyEnvironment, expr, true)
	if err != nil {
		return nil, err
	}
	return &ReadyExpr{prog: prog}, nil
}

// Ready evaluates the expression with self and dep, each an object as
// unstructured content. An error (a field dep does not have, the cost
// limit, a result that is not a bool) says nothing of the dependency.
func (e *ReadyExpr) Ready(self, dep map[string]any) (bool, error) {
	return e.prog.eval(map[string]any{SelfVar: self, DepVar: dep})
}
