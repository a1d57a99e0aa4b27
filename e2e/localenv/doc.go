// Package localenv starts the whole Plumb suite on this machine, on
// 127.0.0.1, from Go: a real control plane (etcd, kube-apiserver and
// kube-controller-manager, all built from Go modules into bin/k8s), a pod
// simulator standing in for the kubelet, an embedded NATS JetStream server,
// a Git smart-HTTP server that accepts pushes and sends GitHub-style
// webhooks, a Slack stand-in that records what Slack would receive, and the
// four controllers as separate processes (bin/*-controller) with their own
// ports. `make run` (cmd/plumb-local) and the e2e tests start the same
// environment through Start.
//
// # The pod simulator
//
// There is no kubelet, so without help Pods would stay Pending forever:
// Deployments would never become available and Jobs (the sample's PreSync
// hook) never complete. kwok is served on the module proxy, but it needs a
// scheduler to bind Pods to its fake Nodes and keeps Node heartbeats; a
// scheduler is one more large binary to build. The launcher therefore plays
// the kubelet itself (simulator.go): it watches Pods and, through the status
// subresource, marks a Job's Pods Succeeded after a short run and every other
// Pod Running and Ready. Pods are never bound to a Node, which the API server
// accepts for status writes and which keeps the node lifecycle and pod
// garbage collection controllers from touching them. Annotations on the Pod
// template shape the simulation:
//
//	local.plumb.dev/start-seconds  delay before the Pod runs (default 0)
//	local.plumb.dev/run-seconds    how long a Job's Pod runs (default 1)
//	local.plumb.dev/exit-code      a Job's Pod exit code (default 0; non-zero fails it)
//
// # Layout of the state folder
//
//	kubeconfig                 admin kubeconfig (system:masters) for kubectl and the controllers
//	apiserver/                 kube-apiserver certificates and the service-account signing key
//	logs/<process>.log         each process's output
//	<controller>/data          source- and render-controller artifact storage
//	nats/                      JetStream store
//	git/                       the Git server's bare repositories
//
// Everything under it is removed by Stop.
package localenv
