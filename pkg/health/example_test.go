package health_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/health"
)

// decode reads one object as the API server (or a watch cache) returns it.
func decode(manifest string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// Evaluate reads only the object: a Deployment in the middle of a rollout
// is Progressing, the same Deployment once its controller has caught up is
// Healthy, a Job out of retries is Degraded, and an object that is not
// there at all is Missing.
func ExampleEvaluate() {
	rollingOut := decode(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3}
`)
	rolledOut := decode(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`)
	failedJob := decode(`
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {backoffLimit: 2}
status:
  failed: 3
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`)
	fmt.Println(health.Evaluate(rollingOut))
	fmt.Println(health.Evaluate(rolledOut))
	fmt.Println(health.Evaluate(failedJob))
	fmt.Println(health.Evaluate(nil))
	// Output:
	// Progressing: 1 of 3 replicas updated
	// Healthy: 3 of 3 replicas updated and available
	// Degraded: job failed: BackoffLimitExceeded: Job has reached the specified backoff limit
	// Missing: object does not exist
}

// The health of a set of objects, such as a sync wave, is the worst of its
// members'.
func ExampleWorse() {
	wave := []health.Status{health.Healthy, health.Progressing, health.Healthy, health.Suspended}
	worst := health.Healthy
	for _, s := range wave {
		if health.Worse(s, worst) {
			worst = s
		}
	}
	fmt.Println(worst)
	// Output: Progressing
}
