// Package localenv starts the whole Plumb suite on this machine, on
// 127.0.0.1, from Go: a real control plane (etcd, kube-apiserver and
// kube-controller-manager, all built from Go modules into bin/k8s), a pod
// simulator standing in for the kubelet (or, with Options.Node "real", a
// real node: see below), an embedded NATS JetStream server,
// a Git smart-HTTP server that accepts pushes (with a repository's
// credentials when it has some: gitauth.go) and sends GitHub-style
// webhooks, a Slack stand-in that records what Slack would receive, an
// HTTP chart repository (pkg/testhelm) for the sample's Helm part, and the
// five controllers as separate processes (bin/*-controller) with their own
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
// subresource, marks a Pod that runs to completion (a Job's, or any with
// restartPolicy Never or OnFailure, such as a Helm chart's test Pod)
// Succeeded after a short run and every other Pod Running and Ready. Pods are never bound to a Node, which the API server
// accepts for status writes and which keeps the node lifecycle and pod
// garbage collection controllers from touching them. Annotations on the Pod
// template shape the simulation:
//
//	local.plumb.dev/start-seconds  delay before the Pod runs (default 0)
//	local.plumb.dev/run-seconds    how long such a Pod runs (default 1)
//	local.plumb.dev/exit-code      its exit code (default 0; non-zero fails it)
//
// # A real node
//
// With Options.Node NodeReal (`make run NODE=real`, plumb-local -node
// real), or NodeAuto (`make run`'s default) where this machine can start
// one now (nodechoice.go; else the simulator, with one line saying why),
// the simulator does not start; a real node does, after the control
// plane (node.go, nodeconfig.go): a registry in this process on 127.0.0.1
// (registry.go) holding the sandbox image, a static Go program (./pause)
// built by plumb.dev/pkg/imagebuild; containerd with runc and the CNI
// bridge, host-local, loopback and portmap plugins (hack/node.sh, bin/node);
// kube-scheduler, kubelet and kube-proxy in iptables mode (bin/k8s). Every
// image comes from that registry (Registry.BuildAndPush), nothing from
// outside. The node's state is in a folder of its own; Pods get addresses
// of PodCIDR on the bridge plumb0, whose address is the Node's. Stop removes
// the sandboxes through the CRI, then unmounts, deletes the kubelet's
// cgroups, the bridge and the KUBE-/CNI- chains (nodestop.go). One real
// node runs on a machine at a time (a lock in /run). It needs root;
// NodeUnavailable says what is missing. docs/design/node.md tells what
// this machine allows and why each setting is what it is.
//
// The node's Pods find the cluster as in any cluster. The API server keeps
// listening on 127.0.0.1 only, is advertised at the bridge's address, where
// the launcher forwards to it (bridgeproxy.go), so the `kubernetes`
// Service (10.0.0.1) leads there, and serves a certificate naming that
// IP, the bridge's and kubernetes.default.svc (apicert.go); the
// ServiceAccount admission plugin, which envtest turns off, is on, so Pods
// get their tokens, and kube-controller-manager publishes kube-root-ca.crt.
// CoreDNS (dns.go) answers the cluster's names on the bridge's address,
// the kubelet's clusterDNS. With Options.NoControllers the launcher starts
// no controller: `plumb install` puts Plumb on the node as Pods
// (e2e/incluster_test.go), from the images PushPlumbImages pushes under
// deploy/'s names (nats-server built from its module included), NATS's
// claim bound to a volume ProvideVolume made, and the Git server's URLs
// on the bridge's address.
//
// # Ports, restarts and waits
//
// No port is chosen by listening, closing and hoping it is still free when
// a child binds it. The launcher binds each controller's metrics, health,
// artifact and receiver ports on 127.0.0.1:0 itself, keeps the sockets, and
// hands them to the controller as inherited file descriptors
// (exec.Cmd.ExtraFiles; the controller's flag says --health-addr=fd:4, see
// plumb.dev/pkg/listen). A restarted controller gets the same sockets, so
// the printed addresses, the webhook URL and the artifact URLs stay true.
// The stand-ins in this process hold their own sockets: the Git server and
// the Slack stand-in serve the listener they bound on port 0, and NATS binds
// port 0 itself and reports its URL. etcd and kube-apiserver take the ports
// envtest suggests (bound and closed, so another process may take one
// first): a control plane that does not start is started again on new
// ports, up to three times. kube-controller-manager serves no port.
//
// Each controller is supervised (Process.Supervised): when it exits without
// Stop it is started again after 1s, 2s, 4s … up to 30s, as a Deployment's
// Pod would be, and Process.Status gives its restarts and last exit, which
// plumb-local shows in its status lines. While Start waits for a controller
// to be ready it says every 15 seconds what /readyz still reports; it gives
// up when the controller exited StartAttempts times, or when
// Options.StartTimeout (default 10 minutes) or the caller's context ends,
// with the end of the controller's log. No step of Start fails after a
// short fixed time: the controllers run with --cache-sync-timeout=10m, and
// the waits for kube-controller-manager, the pod simulator and the
// Receiver's webhook path last as long as the start may.
//
// # Shards, leaders and standbys
//
// Options.Shards starts shards of the five controllers beside the main
// instance, each with its --watch-label-selector (docs/design/sharding.md).
// Every controller runs alone with leader election off, unless
// Options.Standbys names it: then it runs as two processes,
// "<controller>" and "<controller>-standby", with leader election on, a
// short Lease (Options.LeaderElection, default 4s / 3s / 1s) in the
// namespace LeaseNamespace, and one storage or receiver socket and folder
// between them, as two replicas of a Deployment share a Service and a
// volume: only the leader serves it. The standby starts once the first
// leads. Env.Leader says which process leads, from the process's own
// leader_election_master_status metric (the Lease's holderIdentity is a
// host name and a random suffix, which names no process); Env.Lease reads
// the Lease.
//
// # The registry
//
// The registry (registry.go) holds the sample's images, built by
// plumb.dev/pkg/imagebuild (cached). A real node always has it; with the
// pod simulator Options.Registry starts it (`make run` and the e2e tests
// do), for the sample's image automation: nothing pulls there, the images
// are tags to scan and retag.
//
// # The sample's images
//
// The sample (DeployDemo) names its images plumb.dev/examples/web and
// plumb.dev/examples/hook, which nothing pulls under the simulator. With
// DemoOptions.ImageRegistry, the registry imagebuild.PushLocal filled,
// the copy pushed to Git gets a kustomize images: entry and the
// HelmRelease the values that point them there (demoimages.go), as a user
// would point the sample at their registry.
//
// With DemoOptions.ImageAutomation (`make run`) the sample also gets
// deploy/examples/plumb/image-demo.yaml (demoautomation.go): an
// ImageRepository of the web image in the Registry, a semver ImagePolicy,
// an ImageUpdateAutomation that sets the tag at the Deployment's marker
// and commits as plumb-bot, signed with an OpenPGP key the launcher makes,
// pushing with the GitRepository's credentials (the Git server asks the
// sample's repository's pushes for them), and a dockerhub Receiver, the
// registry's push webhook. ImageTryCommands prints CI's two steps: plumb
// tag image and the webhook.
//
// When bin/plumb-plugin-envsubst is built (hack/run.sh and the e2e tests
// build it), the launcher runs that example config-management plugin as a
// supervised process on plugins/envsubst.sock and gives render-controller
// --plugin-dir for the folder (plugin.go); DemoOptions.Plugin (`make run`)
// then adds the sample's plugin part: deploy/examples/plugin pushed as the
// repository's plugin/ folder and the Kustomization demo-plugin of
// deploy/examples/plumb/plugin-demo.yaml, which the plugin renders.
//
// # Layout of the state folder
//
//	kubeconfig                 admin kubeconfig (system:masters) for kubectl and the controllers
//	apiserver/                 kube-apiserver certificates and the service-account signing key
//	logs/<process>.log         each process's output
//	<controller>/data          source- and render-controller artifact storage (a standby shares its leader's)
//	nats/                      JetStream store
//	git/                       the Git server's bare repositories
//	registry/                  the registry's blobs (Options.Registry or a real node)
//	plugins/                   the example plugin's socket, render-controller's --plugin-dir
//	plugin-envsubst-tmp/       the example plugin's TMPDIR: the trees it is sent
//
// Everything under it is removed by Stop.
package localenv
