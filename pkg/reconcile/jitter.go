package reconcile

import (
	"math/rand/v2"
	"time"
)

// Jitter returns d plus or minus up to 5%, so objects created together do
// not all reconcile at the same instant forever after.
//
// Plumb keeps its own rather than fluxcd/pkg/runtime/jitter: that one draws
// from a single math/rand.Rand, which is not safe for concurrent use, and
// reconcilers run --concurrent workers at once; math/rand/v2's top-level
// functions are.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := int64(d) / 10
	if spread == 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread))
}
