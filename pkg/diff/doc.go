// Package diff is the comparison half of sync-controller's drift detection.
//
// sync-controller asks the API server for a server-side dry-run apply of each
// desired object and hands the result to Diff together with the live object.
// Comparing with the dry-run result, not with the rendered manifest, is what
// keeps defaulting and quantity formats (500m vs 0.5) from showing up as
// drift: both sides are in the server's own normalized form.
//
// Diff then
//
//  1. normalizes both sides (Normalize): drops status and the fields the
//     server owns or rewrites on every write (metadata.managedFields,
//     resourceVersion, uid, generation, creationTimestamp, selfLink), the
//     kubectl.kubernetes.io/last-applied-configuration annotation (it holds
//     a copy of the whole object, Secret data included), and labels or
//     annotations maps left empty;
//  2. removes the fields named by the Kustomization's spec.ignore rules from
//     both sides (Ignorer): each rule has an optional target selector and
//     names fields in up to three ways, Argo CD's ignoreDifferences': RFC
//     6901 JSON pointers ("/spec/replicas",
//     "/metadata/annotations/example.com~1owner"), the same on both sides;
//     jq path expressions (github.com/itchyny/gojq, a maintained jq in Go),
//     evaluated on each side, since each has its own list order, each
//     evaluation bounded by a deadline and a count of fields, one that fails
//     on an object ignoring nothing there; and field managers, whose fields
//     in the live object's managedFields are found on each side by their
//     structured-merge-diff paths (list elements by key). Parent maps
//     emptied by the removal go too, so ignoring the only annotation does
//     not leave "annotations: {}" behind;
//  3. walks both trees and reports every leaf that differs as a Change with a
//     dotted path (spec.replicas, spec.template.spec.containers[0].image,
//     metadata.labels["app.kubernetes.io/name"]) and the before (live) and
//     after (desired) values as JSON text, empty on the side where the field
//     is absent. Changes come in walk order: map keys sorted, list elements
//     by index.
//
// The Action is Created (no live object), Deleted (no desired object),
// Configured (at least one change) or Unchanged.
//
// Secrets: the values under data and stringData never leave this package.
// A changed, added or removed key is reported with the fixed marker Redacted
// in place of each present value, whatever the value's length or content.
// Values that variable substitution copied out of Secrets into other fields
// are hidden by a Redactor built from those values (pkg/drift's
// SecretRedactor builds it for a Kustomization).
//
// The selector of an ignore rule matches group, version, kind and namespace
// exactly, name as a regular expression anchored at both ends, and labels and
// annotations as label-selector expressions (k8s.io/apimachinery/pkg/labels).
// It is evaluated on the desired object (the live one when there is none), so
// both sides always lose the same fields.
//
// Hash returns a stable digest of the normalized desired object;
// sync-controller keeps it per applied object to skip a dry-run when neither
// the desired object nor the live resourceVersion changed. A Result names
// its object by pkg/object's ID (Result.Object is its text); Paths lists the
// changes as status.drift.paths has them, and Truncate bounds a list for a
// message. The package builds no event: turning changes into pkg/events
// payloads is the caller's (sync-controller's drift report). ParsePath
// reads a Change's path back into its elements, and PointerOf turns it
// into the JSON pointer an ignore rule takes.
//
// The comparison with the cluster itself, the server-side dry-run apply as
// sync-controller makes it, is pkg/drift's Compare, which both
// sync-controller and `plumb diff` call.
package diff
