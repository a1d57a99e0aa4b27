// Package textbudget runs Go text/templates that users write (an Alert's
// summary and message, an ImageUpdateAutomation's commit message) within
// bounds, as the controllers' shared guard:
//
//   - Funcs: the functions such a template may call. text/template's
//     builtins that build text (print, printf, println, html, js,
//     urlquery) are replaced, and the text helpers added (upper, lower,
//     quote, replace, trim, truncate, default, ...), so that each checks
//     what its result may grow to before building it, against a budget
//     for the whole execution (MaxBuiltBytes by default): a template that
//     feeds results back into functions ({{$x = print $x $x}}, nested
//     {{with print . .}}) doubles its text at every step, which a bound
//     on each result alone would let through. printf refuses widths and
//     precisions over MaxWidth. None reads the environment, a file or the
//     network: they are pure text helpers written here rather than
//     sprig's map, which also holds env, expandenv, crypto and list
//     builders (until, seq) that defeat the bounds.
//   - Runner: executes a parsed template with an output bound and a
//     timeout, at most a few at once, so executions left behind by the
//     timeout (text/template takes no context) cannot pile up.
//
// What a template's shape may do (which {{range}} is allowed) depends on
// its data, so each caller checks that at parse time itself.
package textbudget
