package health

import (
	"encoding/json"
	"strings"

	"plumb.dev/pkg/argocd"
)

// stale is the Progressing result for an object whose controller has not
// observed its newest generation yet; any status it shows is about an older spec.
func stale(o object, kind string) Result {
	obs, ok := o.int("status", "observedGeneration")
	if !ok {
		return result(Progressing, "waiting for the %s controller to observe generation %d", kind, o.generation())
	}
	return result(Progressing, "waiting for the %s controller to observe generation %d (status is at %d)", kind, o.generation(), obs)
}

// deployment: paused → Suspended; a rollout past its progress deadline →
// Degraded; otherwise Progressing until every replica is updated, the old
// ones are gone and the updated ones are available.
func deployment(o object) Result {
	if o.boolean("spec", "paused") {
		return result(Suspended, "Deployment is paused")
	}
	if o.observedStale() {
		return stale(o, "Deployment")
	}
	conds := o.conditions()
	if c, ok := findCondition(conds, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		return result(Degraded, "rollout exceeded its progress deadline: %s", c.why())
	}
	replicas := o.intOr(1, "spec", "replicas")
	updated := o.intOr(0, "status", "updatedReplicas")
	total := o.intOr(0, "status", "replicas")
	available := o.intOr(0, "status", "availableReplicas")
	// A ReplicaFailure (quota exceeded, admission denied) may clear on its
	// own, so it does not fail the sync here; it explains the wait instead.
	suffix := ""
	if c, ok := findCondition(conds, "ReplicaFailure"); ok && c.Status == "True" {
		suffix = " (" + c.why() + ")"
	}
	switch {
	case updated < replicas:
		return result(Progressing, "%d of %d replicas updated%s", updated, replicas, suffix)
	case total > updated:
		return result(Progressing, "%d old replicas pending termination%s", total-updated, suffix)
	case available < updated:
		return result(Progressing, "%d of %d updated replicas available%s", available, updated, suffix)
	}
	return result(Healthy, "%d of %d replicas updated and available", available, replicas)
}

// statefulSet: every replica ready; then OnDelete is done (pods take the new
// revision only when someone deletes them), and a rolling update is done
// when the pods at or above its partition (0 unless set) are updated, which
// is Argo CD's rule. A partition at or above spec.replicas holds every pod
// back, so nothing is left to update.
func statefulSet(o object) Result {
	if o.observedStale() {
		return stale(o, "StatefulSet")
	}
	replicas := o.intOr(1, "spec", "replicas")
	ready := o.intOr(0, "status", "readyReplicas")
	updated := o.intOr(0, "status", "updatedReplicas")
	if ready < replicas {
		return result(Progressing, "%d of %d pods ready", ready, replicas)
	}
	if o.str("spec", "updateStrategy", "type") == "OnDelete" {
		return result(Healthy, "%d pods ready (%d updated); update strategy OnDelete: pods take a new revision only when deleted", ready, updated)
	}
	partition := o.intOr(0, "spec", "updateStrategy", "rollingUpdate", "partition")
	want := max(replicas-max(partition, 0), 0)
	revision := o.str("status", "updateRevision")
	if partition > 0 {
		if updated < want {
			return result(Progressing, "partitioned rollout: %d of %d pods at or above partition %d updated to revision %s", updated, want, partition, revision)
		}
		return result(Healthy, "partitioned rollout complete: %d pods updated, %d held back by partition %d", updated, replicas-want, partition)
	}
	if updated < want {
		return result(Progressing, "rolling update: %d of %d pods at revision %s", updated, replicas, revision)
	}
	if revision == "" {
		return result(Healthy, "%d of %d pods ready", ready, replicas)
	}
	return result(Healthy, "%d of %d pods ready at revision %s", ready, replicas, revision)
}

// daemonSet: every scheduled pod updated (unless OnDelete) and available.
func daemonSet(o object) Result {
	if o.observedStale() {
		return stale(o, "DaemonSet")
	}
	desired := o.intOr(0, "status", "desiredNumberScheduled")
	updated := o.intOr(0, "status", "updatedNumberScheduled")
	available := o.intOr(0, "status", "numberAvailable")
	onDelete := o.str("spec", "updateStrategy", "type") == "OnDelete"
	if !onDelete && updated < desired {
		return result(Progressing, "%d of %d scheduled pods updated", updated, desired)
	}
	if available < desired {
		return result(Progressing, "%d of %d scheduled pods available", available, desired)
	}
	if onDelete {
		return result(Healthy, "%d of %d pods available; update strategy OnDelete: pods take a new revision only when deleted", available, desired)
	}
	return result(Healthy, "%d of %d pods updated and available", available, desired)
}

// replicaSet: ReplicaFailure=True → Degraded; otherwise Progressing until
// every replica is available.
func replicaSet(o object) Result {
	if o.observedStale() {
		return stale(o, "ReplicaSet")
	}
	if c, ok := findCondition(o.conditions(), "ReplicaFailure"); ok && c.Status == "True" {
		return result(Degraded, "replica failure: %s", c.why())
	}
	replicas := o.intOr(1, "spec", "replicas")
	available := o.intOr(0, "status", "availableReplicas")
	if available < replicas {
		return result(Progressing, "%d of %d replicas available", available, replicas)
	}
	return result(Healthy, "%d of %d replicas available", available, replicas)
}

// degradedWaiting reports whether a container waiting for this reason will
// not get out of it by itself: every back-off (CrashLoopBackOff,
// ImagePullBackOff), every *Error (CreateContainerConfigError,
// RunContainerError), every Err* but ErrImagePull, and InvalidImageName.
// ErrImagePull is left out: it is the first, often transient, failure before
// ImagePullBackOff, and a Degraded fails a wait at once.
func degradedWaiting(reason string) bool {
	if reason == "ErrImagePull" {
		return false
	}
	return strings.HasSuffix(reason, "BackOff") || strings.HasSuffix(reason, "Error") ||
		strings.HasPrefix(reason, "Err") || reason == "InvalidImageName"
}

// containerStatuses lists the init containers' statuses, then the app
// containers', in the order they run.
func containerStatuses(o object) []object {
	var out []object
	for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
		for _, item := range o.slice("status", key) {
			out = append(out, object{asMap(item)})
		}
	}
	return out
}

// pod follows Argo CD's Pod rule. For restartPolicy Always (the API's
// default) a container stuck waiting is Degraded; a run-to-completion pod
// (OnFailure, Never) is not failed for it, because it may be a hook that
// would fail the sync and then run anyway once the image arrives; it stays
// Progressing and the wait's timeout names the reason. Then the phase
// decides: Succeeded → Healthy, Failed → Degraded, Pending → Progressing,
// Running → Healthy once Ready for Always (Degraded when not Ready after a
// container already terminated, Progressing before), and Progressing for a
// run-to-completion pod, which counts only once it has succeeded.
func pod(o object) Result {
	policy := o.str("spec", "restartPolicy")
	if policy == "" {
		policy = "Always"
	}
	if policy == "Always" {
		if r, ok := podStuckWaiting(o); ok {
			return r
		}
	}
	switch phase := o.str("status", "phase"); phase {
	case "Succeeded":
		return result(Healthy, "pod completed")
	case "Failed":
		return result(Degraded, "%s", podFailedWhy(o))
	case "", "Pending":
		return podPending(o)
	case "Running":
		_, ignorePolicy := o.get("metadata", "annotations", argocd.IgnoreRestartPolicyAnnotation)
		if policy != "Always" && !ignorePolicy {
			return result(Progressing, "pod running (restartPolicy %s: healthy once it succeeds)", policy)
		}
		ready, hasReady := findCondition(o.conditions(), "Ready")
		if hasReady && ready.Status == "True" {
			return result(Healthy, "pod running and ready")
		}
		// Not ready after a container already ended once: Argo CD's rule,
		// it crashed or was killed and has not come back yet.
		for _, item := range o.slice("status", "containerStatuses") {
			cs := object{asMap(item)}
			if _, ok := cs.get("lastState", "terminated"); ok {
				msg := ""
				if exit := lastExit(cs); exit != "" {
					msg = ": " + exit
				}
				return result(Degraded, "pod running but not ready, container %s restarted%s", cs.str("name"), msg)
			}
		}
		if hasReady && ready.Message != "" {
			return result(Progressing, "pod running, not ready: %s", ready.why())
		}
		return result(Progressing, "pod running, not ready")
	case "Unknown":
		return result(Unknown, "pod phase Unknown: %s", o.str("status", "message"))
	default:
		return result(Unknown, "pod phase %q", phase)
	}
}

// podStuckWaiting finds the first container waiting for a reason it will
// not get out of by itself.
func podStuckWaiting(o object) (Result, bool) {
	for _, cs := range containerStatuses(o) {
		reason := cs.str("state", "waiting", "reason")
		if !degradedWaiting(reason) {
			continue
		}
		msg := cs.str("state", "waiting", "message")
		if reason == "CrashLoopBackOff" {
			// The kubelet's message only restates the back-off, whose
			// figure grows with every restart, and the pod's uid; how the
			// container last ended says why, and stays the same while it
			// keeps failing the same way (so a repeated alert is
			// recognized as the same news).
			msg = lastExit(cs)
		}
		if msg != "" {
			msg = ": " + msg
		}
		return result(Degraded, "container %s: %s%s", cs.str("name"), reason, msg), true
	}
	return Result{}, false
}

// podPending says what a pending pod waits for: scheduling, or a container
// waiting (an image pull, or a reason a run-to-completion pod is not failed
// for).
func podPending(o object) Result {
	why := ""
	for _, cs := range containerStatuses(o) {
		if r := cs.str("state", "waiting", "reason"); r != "" && r != "PodInitializing" && r != "ContainerCreating" {
			why = "container " + cs.str("name") + " waiting: " + r
			if m := cs.str("state", "waiting", "message"); m != "" {
				why += ": " + m
			}
			break
		}
	}
	if c, ok := findCondition(o.conditions(), "PodScheduled"); ok && c.Status == "False" {
		why = c.why()
	}
	if why != "" {
		return result(Progressing, "pod pending: %s", why)
	}
	return result(Progressing, "pod pending")
}

// podFailedWhy explains a failed pod: the pod's own message (an eviction),
// else the first init or app container that failed, else the pod's reason.
func podFailedWhy(o object) string {
	if msg := o.str("status", "message"); msg != "" {
		return msg
	}
	for _, cs := range containerStatuses(o) {
		if why := terminatedWhy(cs); why != "" {
			return why
		}
	}
	if r := o.str("status", "reason"); r != "" {
		return r
	}
	return "pod failed"
}

// lastExit describes how a container in a back-off last ended: "last
// exited with code 1 (Error)", or "" when the status does not say.
func lastExit(cs object) string {
	code, ok := cs.int("lastState", "terminated", "exitCode")
	if !ok {
		return ""
	}
	s := "last exited with code " + itoa(code)
	if r := cs.str("lastState", "terminated", "reason"); r != "" {
		s += " (" + r + ")"
	}
	return s
}

// terminatedWhy describes a container that terminated in failure
// (OOMKilled or a non-zero exit code) by its termination message when it
// wrote one, else by its exit code; "" for a container that did not fail.
func terminatedWhy(cs object) string {
	if _, ok := cs.get("state", "terminated"); !ok {
		return ""
	}
	name := cs.str("name")
	code, _ := cs.int("state", "terminated", "exitCode")
	reason := cs.str("state", "terminated", "reason")
	if reason != "OOMKilled" && code == 0 {
		return ""
	}
	if msg := cs.str("state", "terminated", "message"); msg != "" {
		return "container " + name + ": " + strings.TrimSpace(msg)
	}
	s := "container " + name + " exited with code " + itoa(code)
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// job: Failed (or FailureTarget, its announcement) → Degraded; Complete →
// Healthy; suspended → Suspended; otherwise Progressing.
func job(o object) Result {
	conds := o.conditions()
	for _, t := range []string{"Failed", "FailureTarget"} {
		if c, ok := findCondition(conds, t); ok && c.Status == "True" {
			return result(Degraded, "job failed: %s", c.why())
		}
	}
	if c, ok := findCondition(conds, "Complete"); ok && c.Status == "True" {
		return result(Healthy, "job completed")
	}
	if c, ok := findCondition(conds, "Suspended"); ok && c.Status == "True" {
		return result(Suspended, "job is suspended")
	}
	if o.boolean("spec", "suspend") {
		return result(Suspended, "job is suspended")
	}
	return result(Progressing, "job running: %d active, %d succeeded, %d failed",
		o.intOr(0, "status", "active"), o.intOr(0, "status", "succeeded"), o.intOr(0, "status", "failed"))
}

// cronJob: suspended → Suspended, otherwise Healthy: its Jobs carry their own health.
func cronJob(o object) Result {
	if o.boolean("spec", "suspend") {
		return result(Suspended, "CronJob is suspended")
	}
	return result(Healthy, "CronJob is scheduled")
}

// pvc: Bound → Healthy, Pending → Progressing, Lost → Degraded.
func pvc(o object) Result {
	switch phase := o.str("status", "phase"); phase {
	case "Bound":
		return result(Healthy, "claim is bound to volume %s", o.str("spec", "volumeName"))
	case "", "Pending":
		return result(Progressing, "claim is waiting to be bound")
	case "Lost":
		return result(Degraded, "claim lost its volume %s", o.str("spec", "volumeName"))
	default:
		return result(Unknown, "claim phase %q", phase)
	}
}

// ingressAddresses lists status.loadBalancer.ingress as ip or hostname.
func ingressAddresses(o object) []string {
	var out []string
	for _, item := range o.slice("status", "loadBalancer", "ingress") {
		in := object{asMap(item)}
		switch {
		case in.str("ip") != "":
			out = append(out, in.str("ip"))
		case in.str("hostname") != "":
			out = append(out, in.str("hostname"))
		default:
			out = append(out, "<pending address>")
		}
	}
	return out
}

// service: a LoadBalancer is Progressing until it has an ingress address;
// every other type is Healthy by existence.
func service(o object) Result {
	if o.str("spec", "type") != "LoadBalancer" {
		return result(Healthy, "service exists")
	}
	if addrs := ingressAddresses(o); len(addrs) > 0 {
		return result(Healthy, "load balancer at %s", strings.Join(addrs, ", "))
	}
	return result(Progressing, "waiting for a load balancer address")
}

// ingress: Progressing until the ingress controller publishes an address.
func ingress(o object) Result {
	if addrs := ingressAddresses(o); len(addrs) > 0 {
		return result(Healthy, "ingress at %s", strings.Join(addrs, ", "))
	}
	return result(Progressing, "waiting for the ingress controller to publish an address")
}

// hpaConditionsAnnotation holds an autoscaling/v1 HPA's conditions as JSON;
// v1 has no status.conditions field.
const hpaConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"

// hpa reads the v2 (and v2beta1, v2beta2) status.conditions or the v1
// annotation, as Argo CD does. A condition Argo CD counts as failed is
// Degraded: AbleToScale=False (no scale target, scale update failing) and
// ScalingActive=False for a spec error (InvalidSelector, and every other
// Invalid* reason). ScalingActive=False for ScalingDisabled (the target has
// zero replicas) is Healthy, as in Argo CD: the autoscaler works and waits
// for the target to be scaled up. ScalingActive=False because metrics are
// missing is Progressing: the metrics server has none for a minute after
// the target's pods start, and since a Degraded fails a wait at once that
// would be a false alarm (Argo CD reports it Degraded). Otherwise Healthy
// once AbleToScale or ScalingLimited is True, Progressing before.
func hpa(o object) Result {
	if _, ok := o.int("status", "observedGeneration"); ok && o.observedStale() {
		return stale(o, "HorizontalPodAutoscaler")
	}
	conds := o.conditions()
	if ann := o.str("metadata", "annotations", hpaConditionsAnnotation); ann != "" && len(conds) == 0 {
		var list []any
		if err := json.Unmarshal([]byte(ann), &list); err != nil {
			return result(Unknown, "cannot read annotation %s: %v", hpaConditionsAnnotation, err)
		}
		conds = parseConditions(list)
	}
	if len(conds) == 0 {
		return result(Progressing, "waiting for the autoscaler to report conditions")
	}
	if c, ok := findCondition(conds, "AbleToScale"); ok && c.Status == "False" {
		return result(Degraded, "not able to scale: %s", c.why())
	}
	if c, ok := findCondition(conds, "ScalingActive"); ok && c.Status == "False" {
		switch {
		case c.Reason == "ScalingDisabled":
			return result(Healthy, "scaling disabled: %s", c.why())
		case strings.HasPrefix(c.Reason, "Invalid"):
			return result(Degraded, "scaling inactive: %s", c.why())
		default:
			return result(Progressing, "scaling inactive: %s", c.why())
		}
	}
	if c, ok := findCondition(conds, "ScalingLimited"); ok && c.Status == "True" {
		return result(Healthy, "scaling limited: %s", c.why())
	}
	if c, ok := findCondition(conds, "AbleToScale"); ok && c.Status == "True" {
		return result(Healthy, "autoscaler is active")
	}
	return result(Progressing, "waiting for the autoscaler to be able to scale")
}

// apiService: Available=True → Healthy, otherwise Progressing: the backing
// service may be in a later wave or still starting; the wait timeout reports it.
func apiService(o object) Result {
	c, ok := findCondition(o.conditions(), "Available")
	switch {
	case ok && c.Status == "True":
		return result(Healthy, "API service is available")
	case ok:
		return result(Progressing, "API service not available: %s", c.why())
	}
	return result(Progressing, "waiting for the aggregator to check the API service")
}

// crd: NamesAccepted=False (a name conflict) or NonStructuralSchema=True (a
// v1beta1 schema the API server cannot prune by) → Degraded; Established=True
// → Healthy; otherwise Progressing: the API server establishes a new CRD
// a moment after accepting its names.
func crd(o object) Result {
	conds := o.conditions()
	if c, ok := findCondition(conds, "NamesAccepted"); ok && c.Status == "False" {
		return result(Degraded, "names not accepted: %s", c.why())
	}
	if c, ok := findCondition(conds, "NonStructuralSchema"); ok && c.Status == "True" {
		return result(Degraded, "schema is not structural: %s", c.why())
	}
	if c, ok := findCondition(conds, "Established"); ok && c.Status == "True" {
		return result(Healthy, "CRD is established")
	}
	return result(Progressing, "waiting for the CRD to be established")
}

// namespace: Terminating → Progressing, otherwise Healthy.
func namespace(o object) Result {
	if o.str("status", "phase") == "Terminating" {
		return result(Progressing, "namespace is terminating")
	}
	return result(Healthy, "namespace is active")
}

// plumbApplication is a Plumb Kustomization or HelmRelease: the generic rule,
// except that one without a Ready condition is Progressing, not Healthy by
// existence: sync-controller always gives it one, and holds it back while
// render-controller has not rendered the generation (an application that
// applies another must not take the new one for healthy before its first
// sync).
func plumbApplication(o object) Result {
	if _, ok := findCondition(o.conditions(), "Ready"); !ok && !o.boolean("spec", "suspend") {
		return result(Progressing, "waiting for its first sync: no Ready condition yet")
	}
	return generic(o)
}

// generic reads any other kind by kstatus conventions. spec.suspend=true
// comes first because a suspended object's controller stops updating its
// status; a status.observedGeneration behind metadata.generation is
// Progressing (only when present: many kinds have none); then Stalled=True →
// Degraded, Reconciling=True → Progressing, Ready decides when present, and
// an object without those conditions is Healthy by existence.
func generic(o object) Result {
	if o.boolean("spec", "suspend") {
		return result(Suspended, "suspended")
	}
	if _, ok := o.int("status", "observedGeneration"); ok && o.observedStale() {
		return stale(o, o.str("kind"))
	}
	conds := o.conditions()
	if c, ok := findCondition(conds, "Stalled"); ok && c.Status == "True" {
		return result(Degraded, "stalled: %s", c.why())
	}
	if c, ok := findCondition(conds, "Reconciling"); ok && c.Status == "True" {
		return result(Progressing, "reconciling: %s", c.why())
	}
	if c, ok := findCondition(conds, "Ready"); ok {
		if gen := o.generation(); c.hasObservedGeneration && gen > 0 && c.ObservedGeneration < gen {
			return result(Progressing, "Ready condition is for generation %d, spec is at %d", c.ObservedGeneration, gen)
		}
		if c.Status == "True" {
			if c.Message != "" {
				return result(Healthy, "%s", c.Message)
			}
			return result(Healthy, "ready")
		}
		return result(Progressing, "not ready: %s", c.why())
	}
	return result(Healthy, "exists")
}
