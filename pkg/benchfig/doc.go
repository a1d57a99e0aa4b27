// Package benchfig holds what Plumb's benchmarks (sync-controller/bench/sync,
// e2e/bench/fleet) share to state their figures the same way:
// percentiles and rounding of durations, the machine's load average, and
// the wait for a foreign edit's revert that the drift figures time. It is
// for benchmark programs, not for the controllers.
package benchfig
