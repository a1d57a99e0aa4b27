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

type compileResult struct {
	prog *program
	err  error
}

// compile returns the program of expr, from the cache when it was
// compiled before.
func compile(expr string) (*program, error) {
	if v, ok := compiled.Get(expr); ok {
		r := v.(compileResult)
		return r.prog, r.err
	}
	prog, err := build(expr)
	compiled.Add(expr, compileResult{prog, err})
	return prog, err
}

func build(expr string) (*program, error) {
	env, err := environment()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	// Parsed, not checked: the variables are the object's top-level
	// fields, which differ from kind to kind.
	ast, issues := env.Parse(expr)
	if issues.Err() != nil {
		return nil, fmt.Errorf("%q does not parse: %w", expr, issues.Err())
	}
	prog, err := env.Program(ast,
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
