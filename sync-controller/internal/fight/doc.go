// Package fight tells a fight from ordinary drift: another field manager
// that rewrites the fields sync-controller reverted, within the fight
// window (--drift-fight-window) of the revert, is fighting it, and further
// corrections of that object are held back — 0.1 s (--drift-fight-backoff),
// then ten times longer after each repeat, up to the owner's interval —
// while ordinary drift is still reverted at once.
//
// A Tracker remembers, per Kustomization or HelmRelease, object and
// foreign field manager, the last revert and whether it is contested; it
// lives as long as the process (a restart forgets every fight). Each sync
// run takes a Run from it (Tracker.Start): its guard is the engine's
// DriftGuard (held objects are skipped without a request), Record updates
// the fights after the engine acted on an object, Requeue brings the next
// reconcile forward to when a held correction is due, and Report records
// one DriftContested event when a fight starts and one DriftContestEnded
// when it ends, and returns what status.drift.contested shows. The
// DriftContested condition, built from Message, is the controller's to
// write, with the rest of the status.
//
// docs/design/sync-engine.md, "Fights", has the reasons.
package fight
