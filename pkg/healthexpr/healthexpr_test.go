package healthexpr_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/healthexpr"
)

// decode reads an object as the API server returns it: numbers are int64,
// as in a watch cache.
func decode(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// certificate is the cert-manager entry: Issuing=True means a (re)issue
// runs, Ready=False that it failed, Ready=True that the certificate is
// there, each at the object's generation. exists, not Flux's documented
// filter(...).all(...), which holds on a list without the condition.
var certificate = kustomizev1.CustomHealthCheck{
	APIVersion: "cert-manager.io/v1",
	Kind:       "Certificate",
	InProgress: "status.conditions.exists(e, e.type == 'Issuing' && e.observedGeneration == metadata.generation && e.status == 'True')",
	Failed:     "status.conditions.exists(e, e.type == 'Ready' && e.observedGeneration == metadata.generation && e.status == 'False')",
	Current:    "status.conditions.exists(e, e.type == 'Ready' && e.observedGeneration == metadata.generation && e.status == 'True')",
}

// sealedSecret reports a Synced condition and no Ready.
var sealedSecret = kustomizev1.CustomHealthCheck{
	APIVersion: "bitnami.com/v1alpha1",
	Kind:       "SealedSecret",
	Failed:     "status.conditions.exists(e, e.type == 'Synced' && e.status == 'False')",
	Current:    "status.conditions.exists(e, e.type == 'Synced' && e.status == 'True')",
}

func compile(t testing.TB, entries ...kustomizev1.CustomHealthCheck) *healthexpr.Checks {
	t.Helper()
	c, err := healthexpr.Compile(entries)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExpressionsDecideInFluxOrder(t *testing.T) {
	checks := compile(t, certificate, sealedSecret)
	for _, tc := range []struct {
		name, object string
		want         health.Status
		message      string
	}{{
		name: "a certificate being issued is Progressing though the old one is still Ready",
		object: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 2}
spec: {secretName: web-tls, dnsNames: [shop.example.com]}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 2, reason: Ready}
  - {type: Issuing, status: "True", observedGeneration: 2, reason: Renewing}
`,
		want: health.Progressing, message: "inProgress holds",
	}, {
		name: "an issued certificate is Healthy",
		object: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 2}
spec: {secretName: web-tls}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 2, reason: Ready, message: Certificate is up to date and has not expired}
`,
		want: health.Healthy, message: "current holds",
	}, {
		name: "a certificate that could not be issued is Degraded",
		object: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 3}
spec: {secretName: web-tls}
status:
  conditions:
  - {type: Ready, status: "False", observedGeneration: 3, reason: DoesNotExist}
`,
		want: health.Degraded, message: "failed holds",
	}, {
		name: "a Ready condition of an older generation decides nothing: Progressing",
		object: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 3}
spec: {secretName: web-tls}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 2, reason: Ready}
`,
		want: health.Progressing, message: "current does not hold yet",
	}, {
		name: "any version of the kind is judged by the entry",
		object: `
apiVersion: cert-manager.io/v1beta1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 1}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 1}
`,
		want: health.Healthy,
	}, {
		name: "a custom resource with its own condition type is Healthy by it",
		object: `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db, namespace: shop, generation: 1}
spec: {encryptedData: {password: AgBy8hCi}}
status:
  conditions:
  - {type: Synced, status: "True"}
`,
		want: health.Healthy,
	}, {
		name: "and Degraded by it",
		object: `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db, namespace: shop, generation: 1}
spec: {encryptedData: {password: AgBy8hCi}}
status:
  conditions:
  - {type: Synced, status: "False", reason: ErrUnsealFailed}
`,
		want: health.Degraded,
	}, {
		name: "an observedGeneration behind the generation is Progressing before any expression",
		object: `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db, namespace: shop, generation: 4}
status:
  observedGeneration: 3
  conditions:
  - {type: Synced, status: "True"}
`,
		want: health.Progressing, message: "observe generation 4",
	}, {
		name: "a string observedGeneration is left to the expressions",
		object: `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db, namespace: shop, generation: 4}
status:
  observedGeneration: "3"
  conditions:
  - {type: Synced, status: "True"}
`,
		want: health.Healthy,
	}, {
		name: "a field the object does not have yet is Unknown with the error",
		object: `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db, namespace: shop, generation: 1}
spec: {encryptedData: {password: AgBy8hCi}}
`,
		want: health.Unknown, message: "healthCheckExprs[1] (bitnami.com/v1alpha1 SealedSecret): failed: no such attribute",
	}, {
		name: "a kind without an entry keeps the built-in rule",
		object: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3}
`,
		want: health.Progressing,
	}, {
		name: "an object being deleted keeps the built-in verdict",
		object: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 2, deletionTimestamp: "2026-01-02T03:04:05Z", finalizers: [example.com/keep]}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 2}
`,
		want: health.Progressing,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := checks.Evaluate(decode(t, tc.object))
			if got.Status != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %s, want %s with a message containing %q", got, tc.want, tc.message)
			}
		})
	}
}

func TestAMissingObjectIsMissing(t *testing.T) {
	if got := compile(t, certificate).Evaluate(nil); got.Status != health.Missing {
		t.Errorf("got %s, want Missing", got)
	}
}

func TestNilChecksAreTheBuiltInRules(t *testing.T) {
	var none *healthexpr.Checks
	obj := decode(t, `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: 1}
status:
  conditions:
  - {type: Ready, status: "False", reason: Pending}
`)
	if got, want := none.Evaluate(obj), health.Evaluate(obj); got != want {
		t.Errorf("got %s, want pkg/health's %s", got, want)
	}
	if c, err := healthexpr.Compile(nil); c != nil || err != nil {
		t.Errorf("Compile(nil) = %v, %v; want nil, nil", c, err)
	}
}

func TestEvaluationFailuresAreUnknown(t *testing.T) {
	obj := decode(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop, generation: 1}
status:
  phase: Running
  replicas: 3
  items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
`)
	for _, tc := range []struct {
		name, current, message string
	}{
		{"a result that is not a bool", "status.phase", "current: returned a string, not a bool"},
		{"a number is not a bool either", "status.replicas + 1", "returned a int"},
		{"a missing field", "status.ready == true", "no such key: ready"},
		{"a missing top-level field", "spec.paused == false", "no such attribute"},
		{"the cost limit", "status.items.all(a, status.items.all(b, status.items.all(c, status.items.all(d, status.items.all(e, a+b+c+d+e > 0)))))", "cost limit exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compile(t, kustomizev1.CustomHealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: tc.current})
			got := c.Evaluate(obj)
			if got.Status != health.Unknown || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %s, want Unknown with a message containing %q", got, tc.message)
			}
		})
	}
}

func TestBadEntriesAreRefusedAndJudgeTheirKindUnknown(t *testing.T) {
	widget := decode(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop, generation: 1}
status: {phase: Running}
`)
	for _, tc := range []struct {
		name    string
		entries []kustomizev1.CustomHealthCheck
		message string
	}{{
		name:    "bad syntax",
		entries: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.phase == 'Running"}},
		message: `healthCheckExprs[0] (example.com/v1 Widget): current: "status.phase == 'Running" does not parse: ERROR`,
	}, {
		name: "bad syntax in an optional expression",
		entries: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget",
			Failed: "status.phase ==", Current: "status.phase == 'Running'"}},
		message: "healthCheckExprs[0] (example.com/v1 Widget): failed:",
	}, {
		name:    "no current",
		entries: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Failed: "true"}},
		message: "current is required",
	}, {
		name: "two entries for one group and kind",
		entries: []kustomizev1.CustomHealthCheck{
			{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.phase == 'Running'"},
			{APIVersion: "example.com/v2", Kind: "Widget", Current: "true"},
		},
		message: "healthCheckExprs[1] (example.com/v2 Widget): Widget.example.com is judged by healthCheckExprs[0] (example.com/v1 Widget) already",
	}, {
		name:    "an expression longer than the parser allows",
		entries: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: strings.Repeat("true && ", 300) + "true"}},
		message: "size exceeds",
	}, {
		name:    "nesting deeper than the parser allows",
		entries: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200)}},
		message: "recursion",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := healthexpr.Compile(tc.entries)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error %v, want one containing %q", err, tc.message)
			}
			if got := c.Evaluate(widget); tc.entries[0].Current != "status.phase == 'Running'" && got.Status != health.Unknown {
				t.Errorf("a Widget is %s, want Unknown: its entry cannot judge it", got)
			}
		})
	}
}

func TestKeyTellsExpressionSetsApart(t *testing.T) {
	a, b := compile(t, certificate), compile(t, certificate)
	if a.Key() != b.Key() {
		t.Error("the same entries give different keys")
	}
	changed := certificate
	changed.Current = "true"
	if compile(t, changed).Key() == a.Key() {
		t.Error("different entries give the same key")
	}
	var none *healthexpr.Checks
	if none.Key() != "" {
		t.Error("the nil Checks has a key")
	}
}

// An expression is compiled once, whoever asks: the second Compile of the
// same text takes the program from the cache.
func BenchmarkCompileCached(b *testing.B) {
	for b.Loop() {
		if _, err := healthexpr.Compile([]kustomizev1.CustomHealthCheck{certificate}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	c := compile(b, certificate)
	obj := decode(b, fmt.Sprintf(`
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: shop, generation: %d}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 2}
`, 2))
	for b.Loop() {
		c.Evaluate(obj)
	}
}
