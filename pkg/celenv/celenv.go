package celenv

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

const (
	// CostLimit bounds one evaluation, in cel-go's cost units (about one
	// per field read, comparison or list element visited): the
	// per-expression limit Kubernetes puts on CRD validation rules, far
	// above what a check of a few fields costs and far below a loop that
	// would hold a worker.
	CostLimit = 1_000_000
	// MaxRecursion bounds the nesting of an expression.
	MaxRecursion = 64
)

// Options are Flux's environment options and the parser's bounds, with
// maxSize the longest expression in code points (its CRD's maxLength).
func Options(maxSize int) []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
		cel.ParserExpressionSizeLimit(maxSize),
		cel.ParserRecursionLimit(MaxRecursion),
	}
}
