package health

import (
	"strings"
)

// maxPodText bounds a message copied from a Pod's status (a kubelet's pull
// error can quote a registry's whole answer).
const maxPodText = 200

// podProblem says what keeps one Pod of a workload from serving, naming
// the container: "container web is CrashLoopBackOff (last exit 3, Error,
// 5 restarts)", "container web is ImagePullBackOff (image r/web:2): …",
// "container web is not ready: readiness probe failing (Pod condition
// Ready=False ContainersNotReady)", "is not scheduled: …"; "" for a Pod
// running and ready, or starting normally.
func podProblem(p object) string {
	switch p.str("status", "phase") {
	case "Succeeded":
		return ""
	case "Failed":
		return "failed: " + clip(podFailedWhy(p))
	}
	if c, ok := findCondition(p.conditions(), "PodScheduled"); ok && c.Status == "False" {
		return "is not scheduled: " + clip(c.why())
	}
	for _, cs := range containerStatuses(p) {
		if why := containerWaiting(p, cs); why != "" {
			return why
		}
	}
	for _, cs := range containerStatuses(p) {
		if why := terminatedWhy(cs); why != "" {
			return clip(why)
		}
	}
	ready, ok := findCondition(p.conditions(), "Ready")
	if !ok || ready.Status == "True" {
		return ""
	}
	for _, item := range p.slice("status", "containerStatuses") {
		cs := object{asMap(item)}
		if cs.boolean("ready") {
			continue
		}
		if _, running := cs.get("state", "running"); !running {
			continue
		}
		return "container " + cs.str("name") + " is not ready: " + notReadyWhy(p, cs) + podCondition(ready)
	}
	return ""
}

// containerWaiting describes a container waiting for anything but its
// normal start.
func containerWaiting(p, cs object) string {
	reason := cs.str("state", "waiting", "reason")
	switch reason {
	case "", "ContainerCreating", "PodInitializing":
		return ""
	}
	name := cs.str("name")
	switch reason {
	case "CrashLoopBackOff":
		return "container " + name + " is CrashLoopBackOff" + restarted(cs)
	case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
		s := "container " + name + " is " + reason
		if image := containerImage(p, name); image != "" {
			s += " (image " + clip(image) + ")"
		}
		if m := cs.str("state", "waiting", "message"); m != "" {
			s += ": " + clip(m)
		}
		return s
	}
	s := "container " + name + " is waiting: " + reason
	if m := cs.str("state", "waiting", "message"); m != "" {
		s += ": " + clip(m)
	}
	return s
}

// restarted is " (last exit 3, Error, 5 restarts)" for a container that
// ended before, "" otherwise.
func restarted(cs object) string {
	code, ok := cs.int("lastState", "terminated", "exitCode")
	if !ok {
		return ""
	}
	parts := []string{"last exit " + itoa(code)}
	if r := cs.str("lastState", "terminated", "reason"); r != "" {
		parts = append(parts, r)
	}
	if n, ok := cs.int("restartCount"); ok {
		if n == 1 {
			parts = append(parts, "1 restart")
		} else {
			parts = append(parts, itoa(n)+" restarts")
		}
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// notReadyWhy explains a running container that is not ready by the probe
// its spec declares: a startup probe not passed yet, else a failing
// readiness probe; and how it last ended when it was restarted (a liveness
// probe's kill).
func notReadyWhy(p, cs object) string {
	spec := containerSpec(p, cs.str("name"))
	why := "running, not ready yet"
	switch {
	case !cs.boolean("started") && spec.has("startupProbe"):
		why = "startup probe not passed yet"
	case spec.has("readinessProbe"):
		why = "readiness probe failing"
	}
	return why + restarted(cs)
}

// podCondition is " (Pod condition Ready=False ContainersNotReady)".
func podCondition(c condition) string {
	s := " (Pod condition Ready=" + c.Status
	if c.Reason != "" {
		s += " " + c.Reason
	}
	return s + ")"
}

// containerSpec is the spec of the named container, init or app.
func containerSpec(p object, name string) object {
	for _, key := range []string{"initContainers", "containers"} {
		for _, item := range p.slice("spec", key) {
			c := object{asMap(item)}
			if c.str("name") == name {
				return c
			}
		}
	}
	return object{}
}

func containerImage(p object, name string) string {
	return containerSpec(p, name).str("image")
}

func (o object) has(path ...string) bool {
	_, ok := o.get(path...)
	return ok
}

// clip bounds a message from a Pod's status to maxPodText characters.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxPodText {
		return s
	}
	cut := maxPodText
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
