package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// Manifests pushed as an OCI artifact, Flux's way: `plumb push artifact`
// packs a folder into the in-process registry (go-containerregistry's
// registry), an OCIRepository follows a semver range of its tags, and a
// Kustomization with sourceRef.kind OCIRepository renders and applies it
// through the real controllers. A second push of a newer tag, taken on
// request (`plumb reconcile source oci`), changes a value and drops an
// object, which is pruned; a push outside the range changes nothing.
func TestOCIArtifactPushedAndApplied(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	ns, appNS := "e2e-oci", "e2e-oci-app"

	registry, err := testhelm.NewRegistry(testhelm.RegistryOptions{Username: "pusher", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(registry.Close)
	url := "oci://" + registry.Host() + "/manifests/app"

	for _, name := range []string{ns, appNS} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"` + registry.Host() + `":{"username":"pusher","password":"s3cret"}}}`},
	})).To(Succeed())

	push := func(tag, greeting string, withExtra bool) string {
		t.Helper()
		dir := t.TempDir()
		files := map[string]string{
			"kustomization.yaml": "resources:\n- config.yaml\n",
			"config.yaml":        configMapYAML("greeting", appNS, greeting),
		}
		if withExtra {
			files["kustomization.yaml"] = "resources:\n- config.yaml\n- extra.yaml\n"
			files["extra.yaml"] = configMapYAML("extra", appNS, "only in 1.0.0")
		}
		for name, content := range files {
			g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
		}
		out := runPlumb(ctx, t, "push", "artifact", url+":"+tag, "--path", dir,
			"--source", "https://git.example/app", "--revision", tag+"@sha1:0123456789abcdef0123456789abcdef01234567",
			"--creds", "pusher:s3cret", "--insecure-registry")
		digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(out)
		g.Expect(digest).NotTo(BeEmpty(), "plumb push artifact printed no digest:\n%s", out)
		return digest
	}
	first := push("1.0.0", "hello from an OCI artifact", true)

	g.Expect(env.Client.Create(ctx, &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: sourcev1.OCIRepositorySpec{
			URL:       url,
			Reference: &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0 <2.0.0"},
			SecretRef: &meta.LocalObjectReference{Name: "registry"},
			Insecure:  true,
			// A long interval: the new tag is taken on request.
			Interval: metav1.Duration{Duration: 10 * time.Minute},
		},
	})).To(Succeed())
	deployer(ctx, g, ns, "deployer", "edit", appNS)
	g.Expect(env.Client.Create(ctx, &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"},
			ServiceAccountName: "deployer",
			Path:               "./",
			Prune:              true,
			Interval:           metav1.Duration{Duration: 10 * time.Minute},
		},
	})).To(Succeed())
	key := types.NamespacedName{Namespace: ns, Name: "app"}

	waitOCIRevision(ctx, g, key, "1.0.0@"+first)
	waitApplied(ctx, t, key, "1.0.0@"+first)
	expectGreeting(ctx, g, appNS, "hello from an OCI artifact")
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "extra"}, &corev1.ConfigMap{})).To(Succeed())

	// 2.0.0 is outside the range: pushed, fetched on request, not taken.
	push("2.0.0", "from outside the range", false)
	second := push("1.1.0", "hello from the second push", false)
	runPlumb(ctx, t, "reconcile", "source", "oci", "app", "-n", ns)
	waitOCIRevision(ctx, g, key, "1.1.0@"+second)
	waitApplied(ctx, t, key, "1.1.0@"+second)
	expectGreeting(ctx, g, appNS, "hello from the second push")
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "extra"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap left out of 1.1.0 is still there (err %v)", err)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func configMapYAML(name, namespace, greeting string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + namespace +
		"\ndata:\n  greeting: " + greeting + "\n"
}

func waitOCIRevision(ctx context.Context, g *WithT, key types.NamespacedName, revision string) {
	g.Eventually(func(g Gomega) {
		repo := &sourcev1.OCIRepository{}
		g.Expect(env.Client.Get(ctx, key, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil(), "no artifact; conditions %v", repo.Status.Conditions)
		g.Expect(repo.Status.Artifact.Revision).To(Equal(revision))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the OCIRepository did not serve %s", revision)
}

func expectGreeting(ctx context.Context, g *WithT, namespace, want string) {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "greeting"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", want))
}

// runPlumb runs the plumb CLI against the e2e control plane and fails the
// test when it fails.
func runPlumb(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plumbCLI, args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("$ plumb %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("plumb %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
