package engine

import "sigs.k8s.io/controller-runtime/pkg/client"

// Client is the client the engine acts with (in its cluster, as its
// identity), for what a sync writes beside the managed objects: a
// HelmRelease's records in Helm's storage.
func (e *Engine) Client() client.Client { return e.client }
