// Package testenv starts what Plumb's tests run against: a real kube-apiserver
// and etcd (through controller-runtime's envtest, with the binaries that
// `make envtest-assets` builds from Go modules into bin/k8s) with Plumb's CRDs
// installed, and an embedded NATS server with JetStream. Everything binds to
// 127.0.0.1 on random ports, and Stop tears all of it down, so one process
// can start and stop environments as often as it likes.
//
// A controller's test package starts one environment in TestMain (Run) or
// with the first test that needs it (Lazy), and gives each test its own
// namespace (see Namespace): envtest runs no kube-controller-manager, so
// namespaces are never fully deleted.
//
// Requests counts a client's API requests (its rest.Config's
// WrapTransport), so a test can assert exactly what a controller costs the
// API server, by method and path.
//
// WithSecureNATS starts the NATS server the way deploy/ runs it: with the
// users and permissions of deploy/nats/accounts.conf (the file itself),
// over TLS with client certificates from a throw-away CA.
// Environment.SecureNATS gives each user's options (Auth), so a test
// connects as a controller, notification-controller or `plumb events`
// would, or without credentials to see the refusal.
package testenv
