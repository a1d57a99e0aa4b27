package health

import (
	"strconv"
	"strings"
)

// The rules for Argo Rollouts' Rollout and Argo Workflows' Workflow make the
// decisions Argo CD's built-in checks make for those two kinds, so a
// repository moved from Argo CD waits on them as it did there.

// rolloutWorkloadGeneration is the annotation the Rollouts controller sets
// on a Rollout whose pod template comes from a referenced workload
// (spec.workloadRef): that workload's generation.
const rolloutWorkloadGeneration = "rollout.argoproj.io/workload-generation"

// looseInt reads a generation the Rollouts controller may write as a number
// or as a decimal string (status.observedGeneration is a string since
// v0.10; before, it was a hash, which reads as absent).
func looseInt(o object, path ...string) (int64, bool) {
	v, ok := o.get(path...)
	if !ok {
		return 0, false
	}
	if s, isString := v.(string); isString {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		return n, err == nil
	}
	return toInt(v)
}

// rolloutObserved reports whether the Rollouts controller has seen the
// newest spec, and the newest spec of its referenced workload. A
// non-numeric observedGeneration (a pre-v0.10 hash) or one ahead of the
// generation cannot be compared and counts as observed, as in Argo CD.
func rolloutObserved(o object) bool {
	if _, ok := o.get("status"); !ok {
		return false
	}
	if obs, ok := looseInt(o, "status", "observedGeneration"); ok && obs < o.generation() {
		return false
	}
	if _, ok := o.get("spec", "workloadRef"); ok {
		want, hasWant := looseInt(o, "metadata", "annotations", rolloutWorkloadGeneration)
		seen, hasSeen := looseInt(o, "status", "workloadObservedGeneration")
		if hasWant != hasSeen || want != seen {
			return false
		}
	}
	return true
}

// rollout (argoproj.io/Rollout): Progressing until the controller observed
// the spec; then status.phase, which Rollouts v1.0 and later compute
// themselves (Paused is Suspended); for older controllers without a phase,
// the replica counts and which ReplicaSet the services select decide.
func rollout(o object) Result {
	if !rolloutObserved(o) {
		return result(Progressing, "waiting for the Rollout controller to observe generation %d", o.generation())
	}
	msg := o.str("status", "message")
	if phase := o.str("status", "phase"); phase != "" {
		if msg == "" {
			msg = "rollout phase " + phase
		}
		switch phase {
		case "Paused":
			return result(Suspended, "%s", msg)
		case "Healthy":
			return result(Healthy, "%s", msg)
		case "Progressing":
			return result(Progressing, "%s", msg)
		case "Degraded":
			return result(Degraded, "%s", msg)
		}
		return result(Unknown, "rollout phase %q: %s", phase, msg)
	}
	return legacyRollout(o)
}

// legacyRollout reads a Rollout whose controller predates status.phase.
func legacyRollout(o object) Result {
	for _, c := range o.conditions() {
		switch {
		case c.Type == "InvalidSpec":
			return result(Degraded, "invalid spec: %s", c.why())
		case c.Type == "Progressing" && (c.Reason == "RolloutAborted" || c.Reason == "ProgressDeadlineExceeded"):
			return result(Degraded, "%s", c.why())
		}
	}
	if len(o.slice("status", "pauseConditions")) > 0 || o.boolean("spec", "paused") {
		return result(Suspended, "Rollout is paused")
	}
	hash := o.str("status", "currentPodHash")
	if hash == "" {
		return result(Progressing, "waiting for the Rollout controller to report its status")
	}
	replicas := o.intOr(1, "spec", "replicas")
	total := o.intOr(0, "status", "replicas")
	updated := o.intOr(0, "status", "updatedReplicas")
	available := o.intOr(0, "status", "availableReplicas")
	if updated < replicas {
		return result(Progressing, "%d of %d replicas updated", updated, replicas)
	}
	if available < updated {
		return result(Progressing, "%d of %d updated replicas available", available, updated)
	}
	stable := o.str("status", "stableRS")
	if stable == "" {
		// Rollouts before v0.8 kept it under status.canary.
		stable = o.str("status", "canary", "stableRS")
	}
	if _, ok := o.get("spec", "strategy", "blueGreen"); ok {
		if o.str("status", "blueGreen", "activeSelector") != hash {
			return result(Progressing, "blue-green: the active service does not select pod template %s yet", hash)
		}
		if stable != "" && stable != hash {
			return result(Progressing, "blue-green: waiting for analysis before %s becomes stable", hash)
		}
	} else if _, ok := o.get("spec", "strategy", "canary"); ok {
		if total > updated {
			return result(Progressing, "%d old replicas pending termination", total-updated)
		}
		if stable != hash {
			return result(Progressing, "canary: waiting for the steps to finish before %s becomes stable", hash)
		}
	}
	return result(Healthy, "%d of %d replicas updated and available at pod template %s", available, replicas, hash)
}

// workflow (argoproj.io/Workflow): status.phase, as Argo CD reads it:
// none yet, Pending or Running → Progressing; Succeeded → Healthy; Failed
// or Error → Degraded; anything else Unknown.
func workflow(o object) Result {
	phase := o.str("status", "phase")
	msg := o.str("status", "message")
	with := func(s string) string {
		if msg == "" {
			return s
		}
		return s + ": " + msg
	}
	switch phase {
	case "":
		return result(Progressing, "%s", with("workflow not started yet"))
	case "Pending", "Running":
		return result(Progressing, "%s", with("workflow "+strings.ToLower(phase)))
	case "Succeeded":
		return result(Healthy, "%s", with("workflow succeeded"))
	case "Failed", "Error":
		return result(Degraded, "%s", with("workflow "+strings.ToLower(phase)))
	}
	return result(Unknown, "%s", with("workflow phase "+strconv.Quote(phase)))
}
