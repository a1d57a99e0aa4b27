// Package v1 holds the notification.plumb.dev/v1 API: Provider (where alerts
// go), Alert (which events become alerts) and Receiver (Git host webhooks that
// trigger an immediate reconcile).
//
// Field names follow Flux's notification.toolkit.fluxcd.io APIs.
// +kubebuilder:object:generate=true
// +groupName=notification.plumb.dev
package v1
