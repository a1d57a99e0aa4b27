// Package alerttext renders an Alert's summary and message templates
// (spec.summary, spec.messageTemplate): Go text/template over a read-only
// view of the event (View), with a small set of text functions (Funcs).
//
// The Alert reconciler parses both (Parse) and sets Ready=False
// (InvalidTemplate) naming the field and the error; the dispatcher renders
// them for every event the Alert sends (Render) and hands the result to
// every provider type: the summary travels as the "summary" metadata key,
// the message replaces the event's message. A summary without template
// actions renders to itself, so a literal summary means what it always
// did.
//
// Templates are user input run on every event, so they are bounded:
//   - at admission by the CRD (spec.summary 255 bytes, spec.messageTemplate
//     4096), and at parse time by shape: no {{define}}, {{template}} or
//     {{block}} (one template, no recursion), no {{range}} inside another
//     or inside {{with}}, and {{range}} only over a map or list field of
//     the event (.Metadata), checked against View's type: never over a
//     number (Go's templates range over integers, and
//     {{range .Timestamp.UnixNano}} would loop for ever printing nothing,
//     which no output bound stops), a method, a function or a variable;
//   - the functions and the runner are plumb.dev/pkg/textbudget's, shared
//     with image-controller's commit messages;
//   - printf refuses widths and precisions over 256;
//   - every function that builds text (print, printf, println, html, js,
//     urlquery, quote, upper, lower, replace: text/template's builtins
//     among them are replaced) checks what its result may grow to before
//     building it, against a budget of MaxBuiltBytes for the whole
//     execution: a template that feeds results back into functions
//     ({{$x = print $x $x}}, nested {{with print . .}}) doubles its text at
//     every step, which a bound on each result alone would let through;
//   - at execution by output (MaxSummaryBytes, MaxMessageBytes) and time
//     (ExecTimeout), with at most four executions running at once, so
//     those left behind by the timeout cannot pile up.
//
// The functions read no environment, file or network: they are pure text
// helpers written in plumb.dev/pkg/textbudget rather than sprig's map, which also holds env,
// expandenv, crypto and list builders (until, seq) that defeat the bounds.
//
// A template that fails at execution (output or time bound, index out of
// range, a function's error) is not an undelivered event: Render returns
// the error and the untemplated text (the event's own message, spec.summary
// as written), which the dispatcher sends after logging the error.
package alerttext
