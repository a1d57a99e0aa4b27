// Command portingdoc writes docs/api/porting-from-flux.md: every field of
// every Flux kind, and whether Plumb's CRD of the same kind accepts it.
//
// It reads two things and writes one. flux-fields.txt is the list of
// Flux's fields — the top-level spec and status fields of each kind's
// storage version, with the values of an enum — taken from Flux's
// published CRDs by `portingdoc -extract <dir of Flux CRDs>`, and kept
// here so the page is made without the network. deploy/crds are Plumb's
// CRDs. A Flux field Plumb's CRD of the kind has is supported, one it
// lacks is refused at admission (the API server's unknown-field error),
// and an enum value it lacks is named; notes.go says why where there is
// more to say. tools.go is the one hand-written section: the status
// fields Flux's tools read, tool by tool, checked in their source. Because the page is made from the CRDs, it cannot drift
// from them: TestThePageIsCurrent fails when it would change, and `make
// generate` rewrites it.
//
// No library writes such a comparison; controller-gen's output is read
// with apiextensions' own types.
package main
