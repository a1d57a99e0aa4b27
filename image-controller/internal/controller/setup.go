package controller

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/pkg/events"
)

// AllowedNetworksFlag lists the networks of private and loopback
// addresses registries may be on (source-controller's flag, same name).
const AllowedNetworksFlag = "allowed-private-networks"

// Options are what the two reconcilers share.
type Options struct {
	Events     *events.Recorder
	Connection Connection
	// NoCrossNamespaceRefs refuses a policy's repository in another
	// namespace (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// RequeueDependency is how soon a policy waiting for its repository's
	// first scan is looked at again (--requeue-dependency).
	RequeueDependency time.Duration
}

// Setup registers image-controller's three reconcilers with mgr, the two
// of tags sharing one in-memory tag store.
func Setup(mgr ctrl.Manager, o Options, copts controller.Options) error {
	m := NewMetrics(ctrlmetrics.Registry)
	tags := NewTags()
	if err := (&ImageRepositoryReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Events: o.Events, Metrics: m,
		Connection: o.Connection, Tags: tags,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	if err := (&ImagePolicyReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Events: o.Events, Metrics: m,
		Connection: o.Connection, Tags: tags,
		NoCrossNamespaceRefs: o.NoCrossNamespaceRefs, RequeueDependency: o.RequeueDependency,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	return (&ImageUpdateAutomationReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Events: o.Events, Metrics: m,
		Connection:           o.Connection,
		NoCrossNamespaceRefs: o.NoCrossNamespaceRefs, RequeueDependency: o.RequeueDependency,
	}).SetupWithManager(mgr, copts)
}
