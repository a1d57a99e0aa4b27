// Package healthexpr judges the health of objects by the CEL expressions of
// a Kustomization's spec.healthCheckExprs, Flux's custom health checks: for
// a kind the built-in rules of pkg/health know nothing useful about (a
// cert-manager Certificate that is Ready=True while it re-issues, a custom
// resource that reports a condition other than Ready), the user says in
// three expressions when an object is on its way, failed, or there.
//
// Compile turns the entries into a Checks; Checks.Evaluate returns the
// health of an object as pkg/health's Result, by the entry of the object's
// group and kind when there is one and by health.Evaluate otherwise, so a
// caller makes one call and treats both alike: sync-controller's waits
// (wait: true, healthChecks, sync waves) and pkg/inspect's tree (`plumb
// tree`, the UI).
//
// An entry decides as Flux does:
//
//   - a status.observedGeneration (an integer) other than
//     metadata.generation is Progressing, before any expression runs: the
//     object's controller has not looked at its newest spec yet;
//   - then inProgress, failed and current run in that order, those that
//     are set, and the first that returns true decides: Progressing,
//     Degraded, Healthy;
//   - none returning true is Progressing;
//   - an expression that fails (a field the object does not have, the cost
//     limit) or returns something other than a bool is Unknown, with the
//     error: not a verdict on the object, so a wait goes on and, at its
//     deadline, says why.
//
// A missing object and one being deleted keep pkg/health's verdict
// (Missing, Progressing): expressions judge objects that exist.
//
// Expressions see the object's top-level fields as variables (apiVersion,
// kind, metadata, spec, status, or data for a kind that has no spec). They
// are parsed, not type-checked, because the fields differ from kind to
// kind; an expression that does not parse is refused by Compile, with the
// entry, the expression and the parser's message.
//
// The expressions come from Git and from the Kustomization, so they are
// hostile input. The CRD bounds their length and number; here the parser
// bounds size and nesting, and every evaluation runs under a cost limit
// (the per-expression limit Kubernetes uses for CRD validation rules) so an
// expression that loops over a large status fails instead of spinning.
// Compiled programs are cached by expression text, bounded, so a resync
// compiles nothing.
//
// CompileReady compiles the other expressions Flux evaluates over objects:
// a dependsOn entry's readyExpr, which says when a dependency is ready
// instead of its Ready condition, with the variables self (the dependent)
// and dep (the dependency). Those two are declared, so the expression is
// type-checked as Flux checks it: another name, or a result that cannot
// be a bool, is refused when compiled rather than at every evaluation.
// The parser's bounds, the cost limit and a cache like the health
// expressions' apply.
//
// The environment is github.com/google/cel-go, the library Kubernetes
// evaluates CRD validation rules with, at the version k8s.io/apiserver and
// fluxcd/pkg/runtime pin, with the options and extensions (strings, sets,
// encoders, optional types) Flux's evaluator declares, so an expression
// written for Flux runs here unchanged. fluxcd/pkg/runtime/cel is not used:
// its programs take no cost limit and it builds a new environment for
// every expression, and its evaluator answers in kstatus statuses, which
// have no message and no Suspended; Plumb's waits and tree read
// pkg/health's Result. docs/design/health-expressions.md has the whole
// design.
package healthexpr
