// Package panics keeps one bad input from crashing a controller. Plumb's
// controllers read what anyone who can push to a repository, or write an
// object in a tenant's namespace, controls: a panic met on such input in a
// goroutine of its own would end the whole process, and with it every
// other tenant's reconciles.
//
// Recover, deferred at the top of such a goroutine (or of a step that reads
// untrusted input), turns a panic into an error (*Error, "panic while
// applying …: <value>") that the caller reports like any other failure,
// on the object's status; Log, for an event handler that has nobody to
// return an error to, only reports it. Both log the panic at error level
// with its stack and count it in
//
//	plumb_panics_recovered_total{where}  counter
//
// where is what the goroutine was doing ("apply", "drift watch", a step
// name), a short fixed string so the label stays bounded.
//
// Reconcilers need neither: pkg/app's manager makes controller-runtime
// recover a panic of any reconcile (RecoverPanic), which fails that
// reconcile, logs it and retries with backoff. HTTP handlers need neither:
// net/http recovers a panic of a handler and closes that connection.
package panics
