package apivalidation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, testenv.WithoutNATS())) }

func newNamespace(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, ns
}

// strict makes the API server refuse unknown fields, as `kubectl apply`
// does by default, so a field Plumb lacks shows up as an error.
var strict = client.FieldValidation("Strict")

func TestEveryCRDIsEstablished(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	// The generated files only (<group>_<plural>.yaml): the folder also holds
	// the kustomization.yaml that lists them for `kubectl apply -k deploy/`.
	files, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*.plumb.dev_*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(len(kinds.All())), "a CRD for each of Plumb's kinds")
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(yaml.Unmarshal(data, &crd)).To(Succeed())
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: crd.Name}, live)).To(Succeed(), crd.Name)
		conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		established := false
		for _, c := range conditions {
			c := c.(map[string]any)
			if c["type"] == string(apiextensionsv1.Established) && c["status"] == string(apiextensionsv1.ConditionTrue) {
				established = true
			}
		}
		g.Expect(established).To(BeTrue(), "%s is not Established", crd.Name)
	}
}

func TestValidObjectsRoundTrip(t *testing.T) {
	ctx, ns := newNamespace(t)
	timeout := metav1.Duration{Duration: 30 * time.Second}
	objects := []client.Object{
		&sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
			Spec: sourcev1.GitRepositorySpec{
				URL:       "ssh://git@example.com/org/repo.git",
				Interval:  metav1.Duration{Duration: time.Minute},
				Timeout:   &timeout,
				Reference: &sourcev1.GitRepositoryRef{Branch: "main", Commit: "0123456789abcdef0123456789abcdef01234567"},
				SecretRef: &meta.LocalObjectReference{Name: "ssh"},
			},
		},
		&kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:  kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
				Path:       "./deploy",
				Interval:   metav1.Duration{Duration: 5 * time.Minute},
				Prune:      true,
				AllowEmpty: true,
				// 0 is a value (hold every prune), not "unset".
				MaxPrunePercent: new(int32),
				DriftPolicy:     kustomizev1.DriftPolicyReport,
				Ignore: []kustomizev1.IgnoreRule{{
					Paths:  []string{"/spec/replicas"},
					Target: &kustomizev1.Selector{Kind: "Deployment"},
				}},
				Jsonnet: &kustomizev1.Jsonnet{
					ExtVars: []kustomizev1.JsonnetVar{{Name: "env", Value: "prod"}},
					TLAs:    []kustomizev1.JsonnetVar{{Name: "replicas", Value: "1 + 1", Code: true}},
					Libs:    []string{"vendor", "./lib"},
				},
			},
		},
		&kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: "plugin", Namespace: ns},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:   kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
				Interval:    metav1.Duration{Duration: 5 * time.Minute},
				Prune:       true,
				DriftPolicy: kustomizev1.DriftPolicyCorrect,
				Plugin: &kustomizev1.Plugin{
					Name: "envsubst",
					Env:  []kustomizev1.PluginEnv{{Name: "GREETING", Value: "hello"}},
					Parameters: []kustomizev1.PluginParameter{
						{Name: "s", String: new("x")},
						{Name: "a", Array: []string{"x", "y"}},
						{Name: "m", Map: map[string]string{"k": "v"}},
					},
				},
			},
		},
		// A plugin without a name is discovered (Argo CD's plugin: {}):
		// the empty object is kept, not dropped.
		&kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: "plugin-discovered", Namespace: ns},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:   kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
				Interval:    metav1.Duration{Duration: 5 * time.Minute},
				Prune:       true,
				DriftPolicy: kustomizev1.DriftPolicyCorrect,
				Plugin:      &kustomizev1.Plugin{},
			},
		},
		&notificationv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Name: "slack", Namespace: ns},
			Spec:       notificationv1.ProviderSpec{Type: "slack", Channel: "#ops", Address: "https://hooks.slack.com/services/x"},
		},
		&notificationv1.Alert{
			ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
			Spec: notificationv1.AlertSpec{
				ProviderRef:  meta.LocalObjectReference{Name: "slack"},
				EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "a"}}},
			},
		},
		&notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Name: "github", Namespace: ns},
			Spec: notificationv1.ReceiverSpec{
				Type:      "github",
				Events:    []string{"push"},
				Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: "GitRepository", Name: "repo"}},
				SecretRef: &meta.LocalObjectReference{Name: "token"},
			},
		},
	}
	for _, obj := range objects {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			g := NewWithT(t)
			want := obj.DeepCopyObject().(client.Object)
			g.Expect(env.Client.Create(ctx, obj, strict)).To(Succeed())
			got := obj.DeepCopyObject().(client.Object)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			g.Expect(specOf(t, got)).To(Equal(withDefaults(t, specOf(t, want), got)))
		})
	}
}

// withDefaults adds to want the fields the API server defaulted, so a
// round-trip compares what the test set and checks the defaults by value.
func withDefaults(t *testing.T, want map[string]any, got client.Object) map[string]any {
	t.Helper()
	switch got.(type) {
	case *notificationv1.Provider:
		want["timeout"] = "15s"
	case *notificationv1.Alert:
		want["eventSeverity"] = "info"
	}
	return want
}

func specOf(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	u, err := toUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}

func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, yaml.Unmarshal(data, &u.Object)
}

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	g.Expect(repo.Spec.Timeout).NotTo(BeNil())
	g.Expect(repo.Spec.Timeout.Duration).To(Equal(60 * time.Second))

	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "defaults"},
			Interval:  metav1.Duration{Duration: time.Minute},
		},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	g.Expect(ks.Spec.DriftPolicy).To(Equal(kustomizev1.DriftPolicyCorrect))
}

func TestInvalidObjectsAreRefused(t *testing.T) {
	ctx, ns := newNamespace(t)
	cases := []struct {
		name     string
		manifest string
		message  string
	}{
		{
			name: "GitRepository with an ftp URL",
			manifest: `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata: {name: ftp}
spec: {url: "ftp://example.com/repo.git", interval: 1m}`,
			message: "url must start with http://, https:// or ssh://",
		},
		{
			name: "GitRepository without interval",
			manifest: `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata: {name: nointerval}
spec: {url: "https://example.com/repo.git"}`,
			message: "spec.interval: Required value",
		},
		{
			name: "GitRepository with semver and tag",
			manifest: `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata: {name: semvertag}
spec: {url: "https://example.com/repo.git", interval: 1m, ref: {tag: v1, semver: ">=1.0.0"}}`,
			message: "spec.ref.semver and spec.ref.tag are mutually exclusive",
		},
		{
			name: "GitRepository with a short commit",
			manifest: `apiVersion: source.plumb.dev/v1
kind: GitRepository
metadata: {name: shortcommit}
spec: {url: "https://example.com/repo.git", interval: 1m, ref: {commit: abc123}}`,
			message: "spec.ref.commit in body should match",
		},
		{
			name: "Kustomization with a plugin parameter of two types",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: pluginparam}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, plugin: {name: envsubst, parameters: [{name: a, string: x, array: [b]}]}}`,
			message: "a plugin parameter is one of string, array and map",
		},
		{
			name: "Kustomization with a plugin name that is not a DNS label",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: pluginname}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, plugin: {name: ../evil}}`,
			message: "spec.plugin.name in body should match",
		},
		{
			name: "Kustomization with a bad driftPolicy",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: baddrift}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, driftPolicy: Ignore}`,
			message: `spec.driftPolicy: Unsupported value: "Ignore": supported values: "Correct", "Report"`,
		},
		{
			name: "Kustomization with a path leaving the source",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: dotdot}
spec: {interval: 1m, prune: true, path: ../other, sourceRef: {kind: GitRepository, name: repo}}`,
			message: "spec.path must not contain '..'",
		},
		{
			name: "Kustomization with a jsonnet library outside the source",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: jsonnetlibs}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, jsonnet: {libs: [vendor, ../../etc]}}`,
			message: "spec.jsonnet.libs must be folders inside the source: no leading '/' and no '..'",
		},
		{
			name: "Kustomization with an absolute jsonnet library",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: jsonnetabs}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, jsonnet: {libs: [/usr/share]}}`,
			message: "spec.jsonnet.libs must be folders inside the source",
		},
		{
			name: "Kustomization with a jsonnet variable twice",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: jsonnetdup}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, jsonnet: {tlas: [{name: a, value: "1"}, {name: a, value: "2"}]}}`,
			message: `spec.jsonnet.tlas[1]: Duplicate value: {"name":"a"}`,
		},
		{
			name: "Kustomization with a jsonnet variable without a name",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: jsonnetnoname}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, jsonnet: {extVars: [{value: x}]}}`,
			message: "spec.jsonnet.extVars[0].name: Required value",
		},
		{
			name: "Kustomization with an unsupported source kind",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: helmrepo}
spec: {interval: 1m, prune: true, sourceRef: {kind: HelmRepository, name: repo}}`,
			message: `spec.sourceRef.kind: Unsupported value: "HelmRepository"`,
		},
		{
			name: "Kustomization with a maxPrunePercent over 100",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: prunepercent}
spec: {interval: 1m, prune: true, maxPrunePercent: 150, sourceRef: {kind: GitRepository, name: repo}}`,
			message: "spec.maxPrunePercent: Invalid value: 150: spec.maxPrunePercent in body should be less than or equal to 100",
		},
		{
			name: "Kustomization with a healthCheckExprs entry without current",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: nocurrent}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [{apiVersion: cert-manager.io/v1, kind: Certificate, failed: "true"}]}`,
			message: "spec.healthCheckExprs[0].current: Required value",
		},
		{
			name: "Kustomization with a healthCheckExprs entry without kind",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: nokind}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [{apiVersion: cert-manager.io/v1, current: "true"}]}`,
			message: "spec.healthCheckExprs[0].kind: Required value",
		},
		{
			name: "Kustomization with a healthCheckExprs expression too long",
			manifest: fmt.Sprintf(`apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: longexpr}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [{apiVersion: cert-manager.io/v1, kind: Certificate, current: "%s"}]}`,
				strings.Repeat("true && ", 256)+"true"),
			message: "spec.healthCheckExprs[0].current: Too long: may not be more than 2048 bytes",
		},
		{
			name: "Kustomization with two healthCheckExprs entries for one kind",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: dupexpr}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [{apiVersion: cert-manager.io/v1, kind: Certificate, current: "true"}, {apiVersion: cert-manager.io/v1, kind: Certificate, current: "false"}]}`,
			message: `spec.healthCheckExprs[1]: Duplicate value: {"apiVersion":"cert-manager.io/v1","kind":"Certificate"}`,
		},
		{
			name: "Kustomization with a malformed healthCheckExprs apiVersion",
			manifest: `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: badapiversion}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [{apiVersion: "Cert Manager/v1", kind: Certificate, current: "true"}]}`,
			message: `spec.healthCheckExprs[0].apiVersion: Invalid value: "Cert Manager/v1": spec.healthCheckExprs[0].apiVersion in body should match`,
		},
		{
			name: "Kustomization with more than 50 healthCheckExprs entries",
			manifest: fmt.Sprintf(`apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: manyexprs}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, healthCheckExprs: [%s]}`, manyHealthCheckExprs(51)),
			message: "spec.healthCheckExprs: Too many: 51: must have at most 50 items",
		},
		{
			name: "Provider of an unknown type",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: pager}
spec: {type: pager, address: "https://example.com"}`,
			message: `spec.type: Unsupported value: "pager"`,
		},
		{
			name: "pagerduty Provider without a routing key",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: pagerduty}
spec: {type: pagerduty}`,
			message: "a pagerduty provider needs spec.channel, the routing key of an Events API v2 integration",
		},
		{
			name: "datadog Provider without a secret",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: datadog}
spec: {type: datadog}`,
			message: "opsgenie and datadog providers need spec.secretRef with the API key in its key token",
		},
		{
			name: "sentry Provider with its DSN in spec.address",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: sentry}
spec: {type: sentry, address: "https://key@o1.ingest.sentry.io/42", secretRef: {name: sentry}}`,
			message: "a sentry provider's address is its DSN, a credential",
		},
		{
			name: "generic-hmac Provider without a secret",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: hmac}
spec: {type: generic-hmac, address: "https://example.com"}`,
			message: "a generic-hmac provider needs spec.secretRef with the signing token",
		},
		{
			name: "nats Provider without a subject",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Provider
metadata: {name: nats}
spec: {type: nats, address: "nats://127.0.0.1:4222"}`,
			message: "a nats provider needs spec.channel, the subject to publish on",
		},
		{
			name: "Alert with a bad severity",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Alert
metadata: {name: sev}
spec: {providerRef: {name: slack}, eventSeverity: warning, eventSources: [{kind: Kustomization, name: "*"}]}`,
			message: `spec.eventSeverity: Unsupported value: "warning"`,
		},
		{
			name: "Receiver of an unknown type",
			manifest: `apiVersion: notification.plumb.dev/v1
kind: Receiver
metadata: {name: gitea}
spec: {type: gitea, secretRef: {name: token}, resources: [{kind: GitRepository, name: repo}]}`,
			message: `spec.type: Unsupported value: "gitea"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := decode(t, tc.manifest, ns)
			err := env.Client.Create(ctx, obj)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}
}

// manyHealthCheckExprs is n entries of distinct kinds, as YAML flow items.
func manyHealthCheckExprs(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{apiVersion: example.com/v1, kind: Kind%d, current: "true"}`, i)
	}
	return strings.Join(items, ", ")
}

func TestFluxManifestsAreAccepted(t *testing.T) {
	ctx, ns := newNamespace(t)
	for _, file := range []string{"flux-gitrepository.yaml", "flux-kustomization.yaml", "flux-parity.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			obj := decode(t, doc, ns)
			t.Run(fmt.Sprintf("%s/%d-%s-%s", file, i, obj.GetKind(), obj.GetName()), func(t *testing.T) {
				g := NewWithT(t)
				wantSpec, _, _ := unstructured.NestedMap(obj.Object, "spec")
				g.Expect(env.Client.Create(ctx, obj, strict)).To(Succeed())

				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(obj.GroupVersionKind())
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
				gotSpec, _, _ := unstructured.NestedMap(got.Object, "spec")
				// Every field the Flux manifest set is stored as written;
				// the server may only add defaults.
				g.Expect(missingFields("spec", wantSpec, gotSpec)).To(BeEmpty())
			})
		}
	}
}

func decode(t *testing.T, manifest, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(namespace)
	return obj
}

// missingFields lists the paths where got lacks a value that want has, or
// holds a different one. Fields only got has (server defaults) are fine.
func missingFields(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var missing []string
		for k, v := range w {
			missing = append(missing, missingFields(path+"."+k, v, g[k])...)
		}
		return missing
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var missing []string
		for i := range w {
			missing = append(missing, missingFields(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return missing
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

// TestAPluginFieldPlumbLacksIsRefused: Argo CD's plugin source has no
// command (the plugin's own configuration has), and a manifest naming one
// is refused under kubectl's strict field validation rather than quietly
// dropped.
func TestAPluginFieldPlumbLacksIsRefused(t *testing.T) {
	ctx, ns := newNamespace(t)
	obj := decode(t, `apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata: {name: pluginunknown}
spec: {interval: 1m, prune: true, sourceRef: {kind: GitRepository, name: repo}, plugin: {name: envsubst, command: [sh]}}`, ns)
	err := env.Client.Create(ctx, obj, strict)
	g := NewWithT(t)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`unknown field "spec.plugin.command"`))
}
