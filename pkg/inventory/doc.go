// Package inventory converts between the objects a Kustomization applies and
// its status.inventory, and finds the objects that left the set (the ones to
// prune). An entry names an object by pkg/object's ID (IDOf) plus the
// version it was applied at; the version does not count when comparing
// sets. Entries are kept sorted so the inventory of the same set is always
// written the same way. The API type writes an entry in Flux's shape (an id
// "<namespace>_<name>_<group>_<kind>" and v, the version), which this
// package's tests check against Flux's own parser.
package inventory
