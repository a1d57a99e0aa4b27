// Package meta holds the types that more than one Plumb API group shares:
// object references, the artifact descriptor that controllers hand to each
// other, and the condition types and reasons every controller reports.
//
// It is a plain Go package, not an API group: it registers no kinds.
// +kubebuilder:object:generate=true
package meta
