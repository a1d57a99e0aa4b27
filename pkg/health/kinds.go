package health

import (
	"encoding/json"
	"strings"
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
// revision only when deleted by someone), a partitioned rollout is done when
// the pods at or above the partition are updated, and a full rolling update
// is done when updateRevision has become currentRevision.
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
		return result(Healthy, "%d pods ready; update strategy OnDelete: pods take a new revision only when deleted", ready)
	}
	if partition, ok := o.int("spec", "updateStrategy", "rollingUpdate", "partition"); ok && partition > 0 {
		want := replicas - partition
		if want < 0 {
			want = 0
		}
		if updated < want {
			return result(Progressing, "partitioned rollout: %d of %d pods at or above partition %d updated", updated, want, partition)
		}
		return result(Healthy, "partitioned rollout complete: %d pods updated, %d held back by partition %d", updated, replicas-want, partition)
	}
	current, update := o.str("status", "currentRevision"), o.str("status", "updateRevision")
	if update != "" && current != update {
		return result(Progressing, "rolling update: %d of %d pods at revision %s", updated, replicas, update)
	}
	return result(Healthy, "%d of %d pods ready at revision %s", ready, replicas, current)
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
// ImagePullBackOff) and every *Error (CreateContainerConfigError,
// RunContainerError), plus two permanent image errors. ErrImagePull is left
// out: it is the first, often transient, failure before ImagePullBackOff.
func degradedWaiting(reason string) bool {
	return strings.HasSuffix(reason, "BackOff") || strings.HasSuffix(reason, "Error") ||
		reason == "InvalidImageName" || reason == "ErrImageNeverPull"
}

// pod: a container stuck waiting → Degraded; Succeeded → Healthy; Failed →
// Degraded; Running is Healthy when Ready for restartPolicy Always, and
// Progressing for a run-to-completion pod (OnFailure, Never), which counts
// only once it has succeeded.
func pod(o object) Result {
	phase := o.str("status", "phase")
	switch phase {
	case "Succeeded":
		return result(Healthy, "pod completed")
	case "Failed":
		msg := o.str("status", "message")
		if msg == "" {
			msg = o.str("status", "reason")
		}
		if msg == "" {
			msg = terminatedWhy(o)
		}
		if msg == "" {
			msg = "pod failed"
		}
		return result(Degraded, "%s", msg)
	}
	for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
		for _, item := range o.slice("status", key) {
			cs := object{asMap(item)}
			reason := cs.str("state", "waiting", "reason")
			if degradedWaiting(reason) {
				msg := cs.str("state", "waiting", "message")
				if reason == "CrashLoopBackOff" {
					// The kubelet's message only restates the back-off,
					// whose figure grows with every restart, and the pod's
					// uid; how the container last ended says why, and stays
					// the same while it keeps failing the same way (so a
					// repeated alert is recognized as the same news).
					msg = lastExit(cs)
				}
				if msg != "" {
					msg = ": " + msg
				}
				return result(Degraded, "container %s: %s%s", cs.str("name"), reason, msg)
			}
		}
	}
	switch phase {
	case "", "Pending":
		why := o.str("status", "reason")
		if c, ok := findCondition(o.conditions(), "PodScheduled"); ok && c.Status == "False" {
			why = c.why()
		}
		if why != "" {
			return result(Progressing, "pod pending: %s", why)
		}
		return result(Progressing, "pod pending")
	case "Running":
		policy := o.str("spec", "restartPolicy")
		if policy == "" || policy == "Always" {
			c, ok := findCondition(o.conditions(), "Ready")
			if ok && c.Status == "True" {
				return result(Healthy, "pod running and ready")
			}
			if ok && c.Message != "" {
				return result(Progressing, "pod running, not ready: %s", c.why())
			}
			return result(Progressing, "pod running, not ready")
		}
		return result(Progressing, "pod running (restartPolicy %s: healthy once it succeeds)", policy)
	case "Unknown":
		return result(Unknown, "pod phase Unknown: %s", o.str("status", "message"))
	}
	return result(Unknown, "pod phase %q", phase)
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

// terminatedWhy describes the first container that terminated with a
// non-zero exit code.
func terminatedWhy(o object) string {
	for _, item := range o.slice("status", "containerStatuses") {
		cs := object{asMap(item)}
		if code, ok := cs.int("state", "terminated", "exitCode"); ok && code != 0 {
			s := "container " + cs.str("name") + " exited with code " + itoa(code)
			if r := cs.str("state", "terminated", "reason"); r != "" {
				s += " (" + r + ")"
			}
			return s
		}
	}
	return ""
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

// hpa reads the v2 status.conditions or the v1 annotation. AbleToScale=False
// (no scale target, scale update failing) → Degraded. ScalingActive=False is
// Suspended for ScalingDisabled (target scaled to zero), Degraded for an
// Invalid* reason (a spec error) and Progressing otherwise: metrics are
// missing for a minute after the target's pods start, and failing the sync
// for that would be a false alarm.
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
			return result(Suspended, "scaling disabled: %s", c.why())
		case strings.HasPrefix(c.Reason, "Invalid"):
			return result(Degraded, "scaling inactive: %s", c.why())
		default:
			return result(Progressing, "scaling inactive: %s", c.why())
		}
	}
	if c, ok := findCondition(conds, "ScalingLimited"); ok && c.Status == "True" {
		return result(Healthy, "scaling limited: %s", c.why())
	}
	return result(Healthy, "autoscaler is active")
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

// crd: NamesAccepted=False (a name conflict) → Degraded; Established=True →
// Healthy; otherwise Progressing.
func crd(o object) Result {
	conds := o.conditions()
	if c, ok := findCondition(conds, "NamesAccepted"); ok && c.Status == "False" {
		return result(Degraded, "names not accepted: %s", c.why())
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
