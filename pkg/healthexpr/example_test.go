package healthexpr_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/healthexpr"
)

// A Certificate re-issuing is still Ready=True, which the built-in rules
// would call Healthy; its entry looks at Issuing first. A Deployment has
// no entry and keeps its built-in rule.
func ExampleChecks_Evaluate() {
	checks, err := healthexpr.Compile([]kustomizev1.CustomHealthCheck{{
		APIVersion: "cert-manager.io/v1",
		Kind:       "Certificate",
		InProgress: "status.conditions.exists(c, c.type == 'Issuing' && c.status == 'True')",
		Failed:     "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
	}})
	if err != nil {
		panic(err)
	}
	for _, manifest := range []string{`
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop}
status:
  conditions:
  - {type: Ready, status: "True"}
  - {type: Issuing, status: "True"}
`, `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop}
status:
  conditions:
  - {type: Ready, status: "True"}
`, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
status: {observedGeneration: 1}
`} {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
			panic(err)
		}
		r := checks.Evaluate(obj)
		if obj.GetKind() == "Deployment" {
			fmt.Println(r.Status, "(pkg/health's rule)")
			continue
		}
		fmt.Println(r)
	}
	// Output:
	// Progressing: healthCheckExprs[0] (cert-manager.io/v1 Certificate): inProgress holds
	// Healthy: healthCheckExprs[0] (cert-manager.io/v1 Certificate): current holds
	// Progressing (pkg/health's rule)
}
