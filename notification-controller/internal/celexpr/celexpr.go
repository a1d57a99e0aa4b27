package celexpr

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/utils/lru"

	"plumb.dev/pkg/celenv"
)

// Bounds on hostile expressions.
const (
	// MaxLength is the longest expression, the CRDs' maxLength.
	MaxLength = 4096
	// interruptEvery is how many comprehension steps pass between two
	// looks at the context.
	interruptEvery = 100
	// cacheSize bounds the programs kept.
	cacheSize = 512
)

// Result is the type an expression must give.
type Result int

const (
	// Bool is a filter's result (resourceFilter).
	Bool Result = iota
	// String is a value's result (commitStatusExpr).
	String
	// Any is a value of any type (a generic-oidc provider's variables).
	Any
)

func (r Result) celType() *cel.Type {
	switch r {
	case String:
		return cel.StringType
	case Any:
		return cel.DynType
	}
	return cel.BoolType
}

// Program is one compiled expression.
type Program struct {
	prog   cel.Program
	result Result
}

type cached struct {
	prog *Program
	err  error
}

var programs = lru.New(cacheSize)

// Compile parses and type-checks expr with the variables vars, each a map
// of string to any value, and checks it gives result. The error quotes the
// expression and CEL's message: both are the object's author's own words.
func Compile(expr string, result Result, vars ...string) (*Program, error) {
	key := fmt.Sprintf("%d\x00%s\x00%s", result, strings.Join(vars, ","), expr)
	if v, ok := programs.Get(key); ok {
		c := v.(cached)
		return c.prog, c.err
	}
	prog, err := compile(expr, result, vars)
	programs.Add(key, cached{prog, err})
	return prog, err
}

func compile(expr string, result Result, vars []string) (*Program, error) {
	opts := celenv.Options(MaxLength)
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, issues := env.Compile(expr)
	if issues.Err() != nil {
		return nil, fmt.Errorf("%q does not compile: %w", expr, issues.Err())
	}
	if out := ast.OutputType(); result != Any && !out.IsExactType(cel.DynType) && !out.IsExactType(result.celType()) {
		return nil, fmt.Errorf("%q gives a %s, not a %s", expr, out, result.celType())
	}
	prog, err := env.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(celenv.CostLimit),
		cel.InterruptCheckFrequency(interruptEvery),
	)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return &Program{prog: prog, result: result}, nil
}

// Bool evaluates a Bool program.
func (p *Program) Bool(ctx context.Context, vars map[string]any) (bool, error) {
	v, err := p.eval(ctx, vars, Bool)
	if err != nil {
		return false, err
	}
	return bool(v.(types.Bool)), nil
}

// String evaluates a String program.
func (p *Program) String(ctx context.Context, vars map[string]any) (string, error) {
	v, err := p.eval(ctx, vars, String)
	if err != nil {
		return "", err
	}
	return string(v.(types.String)), nil
}

// Value evaluates an Any program. The value is CEL's own, which another
// program reads unchanged when it is put in one of its variables.
func (p *Program) Value(ctx context.Context, vars map[string]any) (any, error) {
	return p.eval(ctx, vars, Any)
}

func (p *Program) eval(ctx context.Context, vars map[string]any, want Result) (any, error) {
	if p.result != want {
		return nil, fmt.Errorf("the expression was compiled for another result")
	}
	val, _, err := p.prog.ContextEval(ctx, vars)
	if err != nil {
		return nil, err
	}
	if want == Any {
		return val, nil
	}
	switch val.(type) {
	case types.Bool:
		if want == Bool {
			return val, nil
		}
	case types.String:
		if want == String {
			return val, nil
		}
	}
	return nil, fmt.Errorf("gave a %s, not a %s", val.Type().TypeName(), want.celType())
}
