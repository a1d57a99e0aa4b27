// Package drift is how sync-controller and `plumb diff` see where the
// cluster differs from Git, written once so that both report the same:
//
//   - Compare reads the live object and diffs it (pkg/diff) with the
//     server-side dry-run apply of the desired one, made as sync-controller
//     makes its applies (pkg/manage: field manager plumb-sync, ignored
//     fields kept at their live values). sync-controller's engine calls it
//     for an object whose cached metadata shows a change; the CLI calls it
//     for every object.
//   - SecretRedactor builds what hides, in a drift report, the values that
//     postBuild.substituteFrom copied out of Secrets into the manifests.
//   - ForeignManagers (and ManagerOf, for one field) read a live object's
//     managedFields to say who made a drift: the field managers other
//     than plumb-sync that own the drifted fields. sync-controller names
//     them on its drift events and in a fight (engine.Result.Managers);
//     the UI shows them beside a diff ("who changed it").
//
// pkg/diff stays pure (no API calls, no events); the requests are here, and
// building event payloads from a report is the caller's.
package drift
