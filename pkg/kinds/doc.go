// Package kinds is the one table of Plumb's kinds: for each, its group,
// version and Kind, its resource and plural, its short names, the
// controller that reconciles it, and how to make an empty object and list
// of it. The schemes (AddToScheme), the command line's kind names, the
// UI's routes, render-controller's source kinds and
// notification-controller's webhook and event kinds all read it, so a new
// kind is one entry here plus its controller.
//
// What a kind does at run time — its interval, retry interval, suspension,
// artifact, reconcile requests, last applied revision — the object answers
// itself (the interfaces of api/meta); this table holds only what is known
// without an object. A test checks it against the CRDs in deploy/crds and
// against the API groups' schemes, so neither can drift from it.
package kinds
