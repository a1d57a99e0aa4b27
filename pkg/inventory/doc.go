// Package inventory converts between the objects a Kustomization applies and
// its status.inventory, and finds the objects that left the set (the ones to
// prune). Entries are kept sorted so the inventory of the same set is always
// written the same way.
package inventory
