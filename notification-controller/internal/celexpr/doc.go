// Package celexpr compiles and evaluates the CEL expressions of
// notification-controller's objects: a Receiver's spec.resourceFilter
// (variables res and req, a bool) and a Provider's spec.commitStatusExpr
// (variables event, alert and provider, a string), and a generic-oidc
// Receiver's oidcProviders variables (any value) and validations (a bool)
// over claims and vars; resourceFilter then also reads claims. Flux's names and
// semantics, so a Flux manifest's expression runs here unchanged: each
// variable is a map of string to any value, the environment has
// celenv's options (Flux's: strings, sets, encoders, optional types), and
// the expression is type-checked against
// the result it must give when it is compiled, so a reconciler can refuse
// it before any call or event needs it.
//
// Expressions are written by whoever may create the object, and a
// Receiver's req is the body of an unauthenticated-until-verified call:
// both are hostile. The CRD bounds the expression's length; the parser
// bounds its size and nesting; every evaluation runs under a cost limit
// (the per-expression limit Kubernetes puts on CRD validation rules) and
// stops when its context ends, so an expression that loops over a large
// body fails instead of holding a webhook slot or a delivery worker.
// Compiled programs are cached by expression and variables, bounded, so a
// webhook call or an event compiles nothing new.
//
// pkg/healthexpr evaluates a Kustomization's health checks from the same
// options; its expressions are parsed only (their variables are an
// object's top-level fields, different for every kind), these are
// checked against declared variables.
package celexpr
