// Package celenv holds what every CEL environment of Plumb shares: the
// options and extensions Flux's evaluator declares (strings, sets,
// encoders, optional types, cross-type numeric comparisons, UTC), so an
// expression written for Flux runs unchanged, and the bounds on hostile
// expressions (parser size and nesting, the evaluation cost limit).
// pkg/healthexpr (a Kustomization's healthCheckExprs) and
// notification-controller's celexpr (a Receiver's resourceFilter, a
// Provider's commitStatusExpr) build their environments from it, each
// with its own variables.
package celenv
