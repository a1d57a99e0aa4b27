package cmd

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// exportedObjects parses `create --export` output back into typed
// objects, strictly: a field the Go type lacks fails the test.
func exportedObjects(t *testing.T, out string) []client.Object {
	t.Helper()
	var objs []client.Object
	for _, doc := range strings.Split(out, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		if _, ok := u.Object["status"]; ok {
			t.Fatalf("exported %s has a status", u.GetKind())
		}
		for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
			if _, ok := u.Object["metadata"].(map[string]any)[f]; ok {
				t.Fatalf("exported %s has metadata.%s", u.GetKind(), f)
			}
		}
		rt, err := scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		obj := rt.(client.Object)
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("parsing %s strictly: %v", u.GetKind(), err)
		}
		// A struct built in Go has no TypeMeta.
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		objs = append(objs, obj)
	}
	return objs
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func om(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: labels}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// Every subcommand's --export prints the object its flags describe, as
// Flux's flags map to Plumb's fields, and writes nothing (no cluster is
// needed: the kubeconfig is not even read for a connection).
func TestCreateExportPrintsTheObjectTheFlagsDescribe(t *testing.T) {
	values := writeFile(t, "values.yaml", "replicas: 2\nimage:\n  tag: a\n")
	values2 := writeFile(t, "values2.yaml", "image:\n  tag: b\n")
	team := map[string]string{"team": "a"}
	minute := metav1.Duration{Duration: time.Minute}
	cases := []struct {
		name string
		args []string
		want []client.Object
	}{{
		name: "source git",
		args: []string{"source", "git", "podinfo", "--url=https://github.com/stefanprodan/podinfo", "--branch=master",
			"--interval=10m", "--label=team=a", "--ignore-paths=/docs,*.md", "--recurse-submodules", "--fetch-timeout=2m", "--secret-ref=creds"},
		want: []client.Object{&sourcev1.GitRepository{ObjectMeta: om("podinfo", team), Spec: sourcev1.GitRepositorySpec{
			URL: "https://github.com/stefanprodan/podinfo", Interval: metav1.Duration{Duration: 10 * time.Minute}, Timeout: dur(2 * time.Minute),
			Reference: &sourcev1.GitRepositoryRef{Branch: "master"}, Ignore: ptrTo("/docs\n*.md"), RecurseSubmodules: true,
			SecretRef: &meta.LocalObjectReference{Name: "creds"},
		}}},
	}, {
		name: "source git with basic auth writes the Secret first",
		args: []string{"source", "git", "podinfo", "--url=https://github.com/stefanprodan/podinfo", "--tag-semver=>=6.0.0", "--username=u", "--password=p"},
		want: []client.Object{
			&corev1.Secret{ObjectMeta: om("podinfo", nil), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
			&sourcev1.GitRepository{ObjectMeta: om("podinfo", nil), Spec: sourcev1.GitRepositorySpec{
				URL: "https://github.com/stefanprodan/podinfo", Interval: minute,
				Reference: &sourcev1.GitRepositoryRef{SemVer: ">=6.0.0"}, SecretRef: &meta.LocalObjectReference{Name: "podinfo"},
			}},
		},
	}, {
		name: "source helm oci",
		args: []string{"source", "helm", "charts", "--url=oci://ghcr.io/stefanprodan/charts", "--secret-ref=ghcr", "--pass-credentials"},
		want: []client.Object{&sourcev1.HelmRepository{ObjectMeta: om("charts", nil), Spec: sourcev1.HelmRepositorySpec{
			URL: "oci://ghcr.io/stefanprodan/charts", Type: "oci", Interval: minute, SecretRef: &meta.LocalObjectReference{Name: "ghcr"}, PassCredentials: true,
		}}},
	}, {
		name: "source oci",
		args: []string{"source", "oci", "manifests", "--url=oci://ghcr.io/org/manifests", "--tag-semver=6.x", "--cert-ref=certs",
			"--verify-provider=cosign", "--verify-secret-ref=cosign-pub", "--layer-selector=application/vnd.cncf.flux.content.v1.tar+gzip:copy", "--insecure"},
		want: []client.Object{&sourcev1.OCIRepository{ObjectMeta: om("manifests", nil), Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://ghcr.io/org/manifests", Interval: minute, Reference: &sourcev1.OCIRepositoryRef{SemVer: "6.x"},
			CertSecretRef: &meta.LocalObjectReference{Name: "certs"}, Insecure: true,
			Verify:        &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: meta.LocalObjectReference{Name: "cosign-pub"}},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.flux.content.v1.tar+gzip", Operation: "copy"},
		}}},
	}, {
		name: "source bucket with keys",
		args: []string{"source", "bucket", "data", "--bucket-name=data", "--endpoint=minio:9000", "--insecure", "--access-key=ak", "--secret-key=sk", "--region=eu"},
		want: []client.Object{
			&corev1.Secret{ObjectMeta: om("data", nil), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"accesskey": []byte("ak"), "secretkey": []byte("sk")}},
			&sourcev1.Bucket{ObjectMeta: om("data", nil), Spec: sourcev1.BucketSpec{
				Provider: "generic", BucketName: "data", Endpoint: "minio:9000", Insecure: true, Region: "eu", Interval: minute,
				SecretRef: &meta.LocalObjectReference{Name: "data"},
			}},
		},
	}, {
		name: "source chart",
		args: []string{"source", "chart", "podinfo", "--source=HelmRepository/podinfo", "--chart=podinfo", "--chart-version=6.x", "--reconcile-strategy=Revision"},
		want: []client.Object{&sourcev1.HelmChart{ObjectMeta: om("podinfo", nil), Spec: sourcev1.HelmChartSpec{
			Chart: "podinfo", Version: "6.x", Interval: minute, ReconcileStrategy: "Revision",
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "podinfo"},
		}}},
	}, {
		name: "kustomization",
		args: []string{"kustomization", "apps", "--source=podinfo.flux", "--path=./deploy", "--prune", "--wait", "--health-check-timeout=3m",
			"--depends-on=infra,ops/crds", "--health-check=Deployment/web.apps", "--target-namespace=apps", "--decryption-provider=sops",
			"--decryption-secret=age", "--retry-interval=30s", "--service-account=deployer", "--kubeconfig-secret-ref=remote"},
		want: []client.Object{&kustomizev1.Kustomization{ObjectMeta: om("apps", nil), Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "podinfo", Namespace: "flux"},
			Path:      "./deploy", Interval: minute, Prune: true, Wait: true, Timeout: dur(3 * time.Minute), RetryInterval: dur(30 * time.Second),
			DependsOn:       []meta.DependencyReference{{Name: "infra"}, {Namespace: "ops", Name: "crds"}},
			HealthChecks:    []kustomizev1.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "apps"}},
			TargetNamespace: "apps", ServiceAccountName: "deployer",
			Decryption: &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "age"}},
			KubeConfig: &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: "remote"}},
		}}},
	}, {
		name: "helmrelease",
		args: []string{"helmrelease", "podinfo", "--source=HelmRepository/podinfo", "--chart=podinfo", "--chart-version=>6.0.0",
			"--values=" + values + "," + values2, "--values-from=ConfigMap/extra", "--crds=CreateReplace", "--create-target-namespace",
			"--target-namespace=apps", "--release-name=web", "--chart-interval=5m", "--depends-on=infra"},
		want: []client.Object{&helmv2.HelmRelease{ObjectMeta: om("podinfo", nil), Spec: helmv2.HelmReleaseSpec{
			Interval: minute, ReleaseName: "web", TargetNamespace: "apps", DependsOn: []meta.DependencyReference{{Name: "infra"}},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "podinfo", Version: ">6.0.0", ReconcileStrategy: "ChartVersion", Interval: dur(5 * time.Minute),
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"},
			}},
			Install:    &helmv2.Install{CreateNamespace: true, CRDs: "Create"},
			Upgrade:    &helmv2.Upgrade{CRDs: "CreateReplace"},
			Values:     &apiextensionsv1.JSON{Raw: []byte(`{"image":{"tag":"b"},"replicas":2}`)},
			ValuesFrom: []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "extra"}},
		}}},
	}, {
		name: "helmrelease from a chartRef",
		args: []string{"helmrelease", "podinfo", "--chart-ref=OCIRepository/podinfo.charts"},
		want: []client.Object{&helmv2.HelmRelease{ObjectMeta: om("podinfo", nil), Spec: helmv2.HelmReleaseSpec{
			Interval: minute, ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "podinfo", Namespace: "charts"},
		}}},
	}, {
		name: "alert",
		args: []string{"alert", "ops", "--provider-ref=slack", "--event-severity=error", "--event-source=Kustomization/*,GitRepository/app.flux"},
		want: []client.Object{&notificationv1.Alert{ObjectMeta: om("ops", nil), Spec: notificationv1.AlertSpec{
			ProviderRef: meta.LocalObjectReference{Name: "slack"}, EventSeverity: "error",
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "*"}, {Kind: "GitRepository", Name: "app", Namespace: "flux"}},
		}}},
	}, {
		name: "alert-provider",
		args: []string{"alert-provider", "slack", "--type=slack", "--channel=ops", "--username=plumb", "--secret-ref=slack-url"},
		want: []client.Object{&notificationv1.Provider{ObjectMeta: om("slack", nil), Spec: notificationv1.ProviderSpec{
			Type: "slack", Channel: "ops", Username: "plumb", SecretRef: &meta.LocalObjectReference{Name: "slack-url"},
		}}},
	}, {
		name: "receiver",
		args: []string{"receiver", "github", "--type=github", "--event=ping,push", "--secret-ref=hook", "--resource=GitRepository/podinfo"},
		want: []client.Object{&notificationv1.Receiver{ObjectMeta: om("github", nil), Spec: notificationv1.ReceiverSpec{
			Type: "github", Events: []string{"ping", "push"}, SecretRef: &meta.LocalObjectReference{Name: "hook"},
			Resources: []notificationv1.CrossNamespaceObjectReference{{Kind: "GitRepository", Name: "podinfo"}},
		}}},
	}, {
		name: "secret helm",
		args: []string{"secret", "helm", "repo", "--username=u", "--password=p", "--ca-crt-file=" + writeFile(t, "ca.crt", "CA")},
		want: []client.Object{&corev1.Secret{ObjectMeta: om("repo", nil), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"username": []byte("u"), "password": []byte("p"), "ca.crt": []byte("CA")}}},
	}, {
		name: "secret tls",
		args: []string{"secret", "tls", "certs", "--tls-crt-file=" + writeFile(t, "tls.crt", "CRT"), "--tls-key-file=" + writeFile(t, "tls.key", "KEY")},
		want: []client.Object{&corev1.Secret{ObjectMeta: om("certs", nil), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"tls.crt": []byte("CRT"), "tls.key": []byte("KEY")}}},
	}, {
		name: "secret oci",
		args: []string{"secret", "oci", "ghcr", "--url=ghcr.io/org/charts", "--username=u", "--password=p"},
		want: []client.Object{&corev1.Secret{ObjectMeta: om("ghcr", nil), Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"ghcr.io":{"auth":"dTpw","password":"p","username":"u"}}}`)}}},
	}, {
		name: "secret git with a bearer token",
		args: []string{"secret", "git", "creds", "--url=https://github.com/org/repo", "--bearer-token=t0k"},
		want: []client.Object{&corev1.Secret{ObjectMeta: om("creds", nil), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"bearerToken": []byte("t0k")}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(append([]string{"create"}, tc.args...), "--export", "-n", "team-a")...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			got := exportedObjects(t, r.out)
			g.Expect(got).To(HaveLen(len(tc.want)))
			for i := range tc.want {
				g.Expect(got[i]).To(Equal(tc.want[i]), "object %d of\n%s", i, r.out)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// An SSH Secret holds a generated key pair (the public half printed as the
// deploy key) and the host keys of --known-hosts-file; source-controller
// reads identity and known_hosts.
func TestCreateSecretGitSSHGeneratesAKeyAndTakesTheHostKeysGiven(t *testing.T) {
	g := NewWithT(t)
	hostPub, _, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	sshPub, err := ssh.NewPublicKey(hostPub)
	g.Expect(err).NotTo(HaveOccurred())
	known := "git.example.com " + string(ssh.MarshalAuthorizedKey(sshPub))
	r := plumb("create", "secret", "git", "deploy", "--url=ssh://git@git.example.com/org/repo", "--known-hosts-file="+writeFile(t, "known_hosts", known),
		"--ssh-key-algorithm=ed25519", "--export", "-n", "team-a")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	objs := exportedObjects(t, r.out)
	g.Expect(objs).To(HaveLen(1))
	s := objs[0].(*corev1.Secret)
	g.Expect(s.Data).To(HaveKeyWithValue("known_hosts", []byte(known)))
	key, err := ssh.ParsePrivateKey(s.Data["identity"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key.PublicKey().Type()).To(Equal(ssh.KeyAlgoED25519))
	g.Expect(s.Data["identity.pub"]).To(Equal(ssh.MarshalAuthorizedKey(key.PublicKey())))
	g.Expect(r.errOut).To(ContainSubstring("deploy key: " + string(s.Data["identity.pub"])))

	// Without host keys nothing is scanned: the command says how to get them.
	r = plumb("create", "secret", "git", "deploy", "--url=ssh://git@git.example.com/org/repo", "--export", "-n", "team-a")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("--known-hosts-file is required"))
	g.Expect(r.errOut).To(ContainSubstring("ssh-keyscan git.example.com"))
	g.Expect(r.out).To(BeEmpty())
}

// A receiver Secret's token is generated when not given, long enough for
// notification-controller, and the webhook URL it yields is printed on
// stderr, leaving stdout to the YAML.
func TestCreateSecretReceiverGeneratesTheToken(t *testing.T) {
	g := NewWithT(t)
	r := plumb("create", "secret", "receiver", "hook", "--type=gcr", "--hostname=plumb.example.com", "--email-claim=sa@p.iam.gserviceaccount.com", "--export", "-n", "team-a")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	s := exportedObjects(t, r.out)[0].(*corev1.Secret)
	token := string(s.Data["token"])
	g.Expect(len(token)).To(BeNumerically(">=", minReceiverToken))
	url := "https://plumb.example.com" + webhookPath(token, "hook", "team-a")
	g.Expect(r.errOut).To(ContainSubstring("webhook URL: " + url))
	g.Expect(s.Data).To(HaveKeyWithValue("email", []byte("sa@p.iam.gserviceaccount.com")))
	g.Expect(s.Data).To(HaveKeyWithValue("audience", []byte(url)))

	short := plumb("create", "secret", "receiver", "hook", "--type=github", "--hostname=h", "--token=short", "--export")
	g.Expect(short.code).To(Equal(ExitError), short.String())
	g.Expect(short.errOut).To(ContainSubstring("at least 32"))
}

// The type lists the flags check are the CRDs' enums, so that --export
// refuses what an apply would and accepts what it would.
func TestCreateTypeListsAreTheCRDsEnums(t *testing.T) {
	g := NewWithT(t)
	enum := func(file string, path ...string) []string {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crds", file))
		g.Expect(err).NotTo(HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(yaml.Unmarshal(data, &crd)).To(Succeed())
		s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, p := range path {
			if p == "[]" {
				s = s.Items.Schema
				continue
			}
			next := s.Properties[p]
			s = &next
		}
		var out []string
		for _, v := range s.Enum {
			var str string
			g.Expect(json.Unmarshal(v.Raw, &str)).To(Succeed())
			out = append(out, str)
		}
		g.Expect(out).NotTo(BeEmpty(), "%s %v", file, path)
		return out
	}
	g.Expect(providerTypes).To(ConsistOf(enum("notification.plumb.dev_providers.yaml", "spec", "type")))
	g.Expect(receiverTypes).To(ConsistOf(enum("notification.plumb.dev_receivers.yaml", "spec", "type")))
	g.Expect(notificationRefKinds).To(ConsistOf(enum("notification.plumb.dev_alerts.yaml", "spec", "eventSources", "[]", "kind")))
	g.Expect(notificationRefKinds).To(ConsistOf(enum("notification.plumb.dev_receivers.yaml", "spec", "resources", "[]", "kind")))
}
