// Package health computes the health of a Kubernetes object from its spec and
// status alone, without API calls (WithPods, below, aside), so sync-controller can wait for each sync
// wave and for `wait: true` on whatever its watch cache holds, and pkg/inspect
// can show it in `plumb tree` and the UI.
//
// Evaluate returns one of six statuses with a message a person reads:
//
//	Healthy      the object does what its spec asks
//	Suspended    paused or suspended on purpose (Deployment spec.paused,
//	             Job or CronJob spec.suspend, a paused Argo Rollout, a custom
//	             resource's spec.suspend)
//	Progressing  not there yet: a rollout, a pending phase, a controller that
//	             has not observed the newest generation, an object being deleted
//	Missing      the object does not exist (a nil object)
//	Degraded     failed and will not recover on its own (ProgressDeadlineExceeded,
//	             CrashLoopBackOff, a failed Job, a lost volume, Stalled=True)
//	Unknown      the status cannot be read (e.g. Pod phase Unknown)
//
// Worse orders them Healthy < Suspended < Progressing < Missing < Degraded <
// Unknown, so the health of a set is the worst of its members.
//
// For every kind Argo CD has a built-in check for (Deployment, ReplicaSet,
// StatefulSet, DaemonSet, Pod, Job, PersistentVolumeClaim, Service, Ingress,
// HorizontalPodAutoscaler, APIService, CustomResourceDefinition, and Argo
// Rollouts' Rollout and Argo Workflows' Workflow) the rule makes Argo CD's
// decision, so a repository moved from Argo CD waits on the same things. It
// departs where Plumb's waits need it: a Degraded fails a wait at once, so a
// state that clears on its own (an image pull's first failure, a CRD not yet
// established, an autoscaler without metrics for new pods) is Progressing; a
// status is trusted only once status.observedGeneration has caught up with
// metadata.generation; and a state that never heals is Degraded even where
// Argo CD's list of reasons misses it. docs/design/health.md has the table,
// kind by kind, and testdata states Argo CD's decision for each case.
//
// Kinds without a rule of their own are read by the kstatus conventions (the
// ones Flux reads): Stalled=True is Degraded, Reconciling=True or Ready other
// than True is Progressing, Ready=True is Healthy, and an object without
// conditions is Healthy by existence (a ConfigMap, a Secret, a Role) — except
// Plumb's own Kustomization and HelmRelease, which are Progressing until
// sync-controller gives them a Ready condition: it writes none while a new
// one waits for its render, and an application applying another must not
// take it for healthy before its first sync. Plumb
// keeps its own rules rather than calling kstatus (sigs.k8s.io/cli-utils)
// because kstatus has no Suspended status and gives no per-kind message a
// person reads, and sync waves, `wait: true` and `plumb tree` report both.
//
// Evaluate reads only the object. A Deployment, StatefulSet or DaemonSet
// that is Progressing or Degraded because its new Pods crash-loop, cannot
// pull their image or never pass their readiness probe says so only in its
// Pods: WithPods (pods.go) looks them up through a Lister, in one or two
// bounded List requests (the newest revision's ReplicaSet, then a page of
// its Pods), and appends the first problem found, naming the Pod and the
// container (podproblem.go). Callers ask for it only when they report an
// unhealthy workload: sync-controller when a health wait fails, so the
// Ready condition (what `plumb get` and the UI show) carries it.
//
// envtest runs no kube-controller-manager, so nothing fills in status there;
// a Deployment created in a test stays Progressing until the test writes its
// status through the status subresource.
package health
