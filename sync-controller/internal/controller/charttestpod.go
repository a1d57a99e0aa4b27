package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/health"
	"plumb.dev/sync-controller/internal/engine"
)

// waitTestPodCompleted holds a test Pod that the health wait let through
// before it ended — pkg/health calls a running Pod healthy once Ready when
// its restartPolicy is Always (the API's default) or Argo CD's
// ignore-restart-policy annotation says so — until its phase says how it
// ended, as Helm judges a test Pod by its phase alone (Succeeded passes,
// Failed fails: the status reader its test hooks are waited with). A Pod
// whose containers are restarted never reaches Succeeded, so it fails
// when the test's timeout ends, as under `helm test`, with a message that
// says why. Any other kind, or a Pod already ended, returns at once.
func (s *syncRun) waitTestPodCompleted(ctx context.Context, timeout time.Duration, h *unstructured.Unstructured) error {
	if h.GetAPIVersion() != "v1" || h.GetKind() != "Pod" {
		return nil
	}
	for {
		live, err := s.target.Engine.Get(ctx, h)
		if err != nil {
			return err
		}
		if live == nil {
			return fmt.Errorf("pod %s was deleted before it completed", h.GetName())
		}
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return nil
		case "Failed":
			return fmt.Errorf("pod %s: %s", h.GetName(), health.Evaluate(live).Message)
		}
		select {
		case <-ctx.Done():
			return notCompleted(live, timeout)
		case <-time.After(engine.HealthPollFallback):
		}
	}
}

// notCompleted is the failure of a test Pod still running at the end of
// its timeout.
func notCompleted(pod *unstructured.Unstructured, timeout time.Duration) error {
	policy, _, _ := unstructured.NestedString(pod.Object, "spec", "restartPolicy")
	if policy == "" || policy == "Always" {
		return fmt.Errorf("pod %s is running but did not complete within %s: a test Pod passes once it has succeeded, "+
			"which a Pod with restartPolicy Always never does (its containers are restarted); set restartPolicy: Never or OnFailure",
			pod.GetName(), timeout)
	}
	return fmt.Errorf("pod %s is running but did not complete within %s: a test Pod passes once it has succeeded", pod.GetName(), timeout)
}
