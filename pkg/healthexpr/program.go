package healthexpr

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/utils/lru"

	"plumb.dev/pkg/celenv"
)

// Bounds on hostile expressions. The CRD refuses an expression longer than
// 2048 characters; the parser's limits hold for anyone calling Compile.
const (
	// CostLimit bounds one evaluation: celenv's, far above what a check
	// of a few conditions costs and far below a loop that would hold a
	// sync-controller worker.
	CostLimit = celenv.CostLimit
	// maxExpressionSize is the parser's limit in code points, that of the
	// CRD's maxLength.
	maxExpressionSize = 2048
	// cacheSize bounds the compiled programs kept: many more expression
	// texts than a cluster's Kustomizations hold, few enough that a flood
	// of distinct ones costs little memory.
	cacheSize = 1024
)

// program is one compiled expression.
type program struct {
	prog cel.Program
}

// environment is the CEL environment every expression is compiled in,
// built once. Its options are Flux's, so expressions carry over.
var environment = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(celenv.Options(maxExpressionSize)...)
})

// compiled caches programs and parse errors by expression text. A parse
// error is cached too: a Kustomization with a bad expression is looked at
// again at every retry.
var compiled = lru.New(cacheSize)

// compileResult is a cache entry: what build made of an expression.
type compileResult[T any] struct {
	value T
	err   error
}

// cachedCompile returns what build makes of expr, from cache when expr
// was built before. An error is kept too: a bad expression is looked at
// again at every retry.
func cachedCompile[T any](cache *lru.Cache, expr string, build func(string) (T, error)) (T, error) {
	if v, ok := cache.Get(expr); ok {
		r := v.(compileResult[T])
		return r.value, r.err
	}
	v, err := build(expr)
	cache.Add(expr, compileResult[T]{v, err})
	return v, err
}

// compile returns the program of expr, from the cache when it was
// compiled before.
func compile(expr string) (*program, error) {
	return cachedCompile(compiled, expr, build)
}

func build(expr string) (*program, error) {
	// Parsed, not checked: the variables are the object's top-level
	// fields, which differ from kind to kind.
	return newProgram(environment, expr, false)
}

// newProgram makes the program of expr in the environment env returns,
// under the cost limit: parsed only, or, with check, also type-checked
// against the environment's declared variables.
func newProgram(env func() (*cel.Env, error), expr string, check bool) (*program, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, issues, failure := (*cel.Ast)(nil), (*cel.Issues)(nil), "does not parse"
	if check {
		ast, issues = e.Compile(expr)
		failure = "does not compile"
	} else {
		ast, issues = e.Parse(expr)
	}
	if issues.Err() != nil {
		return nil, fmt.Errorf("%q %s: %w", expr, failure, issues.Err())
	}
	if check && !ast.OutputType().IsAssignableType(cel.BoolType) {
		return nil, fmt.Errorf("%q returns a %s, not a bool", expr, ast.OutputType())
	}
	prog, err := e.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(CostLimit),
	)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return &program{prog: prog}, nil
}

// eval runs the program over an object's fields and returns its bool.
func (p *program) eval(fields map[string]any) (bool, error) {
	val, _, err := p.prog.Eval(fields)
	if err != nil {
		return false, err
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("returned a %s, not a bool", val.Type().TypeName())
	}
	return bool(b), nil
}
