package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/ociartifact"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/pkg/testtar"
)

// A tag, a semver range and a digest pin each resolve to the artifact
// Flux's rules pick, stored with Flux's revision format and the pushed
// annotations as metadata.
func TestOCIRepositoryResolvesTagSemverAndDigest(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/manifests/podinfo"
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0"} {
		digests[v] = pushDir(t, url+":"+v, map[string]string{"deploy/cm.yaml": configMap(v)}, nil)
	}
	ns := namespace(t)

	cases := []struct {
		name     string
		ref      *sourcev1.OCIRepositoryRef
		version  string
		revision string
	}{
		{"tag", &sourcev1.OCIRepositoryRef{Tag: "1.0.0"}, "1.0.0", "1.0.0@" + digests["1.0.0"]},
		{"semver", &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0 <2.0.0", Tag: "2.0.0"}, "1.1.0", "1.1.0@" + digests["1.1.0"]},
		{"semver-filter", &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0-0 <2.0.0", SemverFilter: ".*-rc.*"}, "1.2.0-rc.1", "1.2.0-rc.1@" + digests["1.2.0-rc.1"]},
		{"digest", &sourcev1.OCIRepositoryRef{Digest: digests["1.0.0"], SemVer: ">=2.0.0"}, "1.0.0", digests["1.0.0"]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			o := newOCIRepository(ns, c.name, url, c.ref)
			g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
			waitHelmReady(t, o, c.revision)
			a := o.Status.Artifact
			g.Expect(a.Path).To(Equal("ocirepository/" + ns + "/" + c.name + "/" + strings.TrimPrefix(digestOf(c.revision), "sha256:") + ".tar.gz"))
			g.Expect(files(t, download(t, a))).To(Equal(map[string]string{"deploy/cm.yaml": configMap(c.version)}))
			g.Expect(a.Metadata).To(HaveKeyWithValue(ociartifact.SourceAnnotation, "https://github.com/example/podinfo"))
			g.Expect(a.Metadata).To(HaveKeyWithValue(ociartifact.RevisionAnnotation, "main@sha1:0123456789abcdef0123456789abcdef01234567"))
			g.Expect(conditionOf(o, sourcev1.ArtifactInStorageCondition).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(o.Finalizers).To(ContainElement(Finalizer))
		})
	}
	g.Expect(reg.Requests()).To(BeNumerically(">", 0))
}

// A new push to the tag is a new revision: the artifact follows it.
func TestOCIRepositoryFollowsATag(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/app"
	first := pushDir(t, url+":latest", map[string]string{"cm.yaml": configMap("one")}, nil)
	o := newOCIRepository(namespace(t), "app", url, nil)
	g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
	waitHelmReady(t, o, "latest@"+first)

	second := pushDir(t, url+":latest", map[string]string{"cm.yaml": configMap("two")}, nil)
	g.Expect(second).NotTo(Equal(first))
	requestHelmReconcile(t, o, "second")
	waitHelmReady(t, o, "latest@"+second)
	g.Expect(files(t, download(t, o.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("two")}))
}

// A reconcile whose reference still resolves to the stored revision pulls
// nothing; a suspended OCIRepository is left alone.
func TestOCIRepositoryPullsOnlyANewRevisionAndHonoursSuspend(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/steady"
	digest := pushDir(t, url+":v1", map[string]string{"cm.yaml": configMap("steady")}, nil)
	ns := namespace(t)
	o := newOCIRepository(ns, "steady", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
	waitHelmReady(t, o, "v1@"+digest)
	pulls := func() float64 { return counterValue(t, "plumb_source_ocirepository_pulls_total", ns, "steady") }
	g.Expect(pulls()).To(Equal(1.0))
	before := o.Status.Artifact.DeepCopy()

	requestHelmReconcile(t, o, "again")
	waitHelmReady(t, o, "v1@"+digest)
	g.Expect(pulls()).To(Equal(1.0), "the same revision is not pulled again")
	g.Expect(o.Status.Artifact).To(Equal(before))

	suspended := newOCIRepository(ns, "suspended", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	suspended.Spec.Suspend = true
	g.Expect(k8s.Create(context.Background(), suspended)).To(Succeed())
	expectLeftAlone(t, suspended)
}

// layerSelector picks the layer by media type; extract repacks it (and
// spec.ignore applies), copy stores the layer's bytes unchanged.
func TestOCIRepositoryLayerSelectorExtractAndCopy(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/layers"
	content := testtar.TarGz(t,
		testtar.File("deploy/cm.yaml", configMap("layers")),
		testtar.File("README.md", "# notes\n"),
	)
	other := testtar.TarGz(t, testtar.File("other.yaml", "not: this\n"))
	pushLayers(t, url+":v1", nil,
		static.NewLayer(other, "application/vnd.example.other.v1.tar+gzip"),
		static.NewLayer(content, ociartifact.ContentMediaType))
	ns := namespace(t)
	ignore := "*.md\n"

	extract := newOCIRepository(ns, "extract", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	extract.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: string(ociartifact.ContentMediaType), Operation: sourcev1.OCILayerExtract}
	extract.Spec.Ignore = &ignore
	copied := newOCIRepository(ns, "copy", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	copied.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: string(ociartifact.ContentMediaType), Operation: sourcev1.OCILayerCopy}
	first := newOCIRepository(ns, "first", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	for _, o := range []*sourcev1.OCIRepository{extract, copied, first} {
		g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
	}
	for _, o := range []*sourcev1.OCIRepository{extract, copied, first} {
		waitHelmCondition(t, o, func(g Gomega, ready *metav1.Condition) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		})
	}
	g.Expect(files(t, download(t, extract.Status.Artifact))).To(Equal(map[string]string{"deploy/cm.yaml": configMap("layers")}))
	g.Expect(extract.Status.ObservedIgnore).To(Equal(&ignore))
	g.Expect(extract.Status.ObservedLayerSelector).To(Equal(extract.Spec.LayerSelector))
	g.Expect(download(t, copied.Status.Artifact)).To(Equal(content))
	g.Expect(files(t, download(t, first.Status.Artifact))).To(Equal(map[string]string{"other.yaml": "not: this\n"}))

	// A media type no layer has: refused, polled.
	missing := newOCIRepository(ns, "missing", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	missing.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: "application/vnd.example.none"}
	g.Expect(k8s.Create(context.Background(), missing)).To(Succeed())
	waitHelmFailed(t, missing, sourcev1.OCILayerOperationFailedReason)
	g.Expect(conditionOf(missing, meta.ReadyCondition).Message).To(ContainSubstring(`no layer of media type "application/vnd.example.none"`))
}

// Hostile layers are refused with a reason and a message naming the
// cause, and nothing is stored: a layer over --oci-max-layer-size, a
// small layer whose files are over --oci-max-extracted-size, a tar
// climbing out with ../, a symlink out of the root, and a layer that is
// not a tar.gz.
func TestOCIRepositoryRefusesHostileLayers(t *testing.T) {
	reg := newRegistry(t, testhelm.RegistryOptions{})
	big := make([]byte, maxOCILayerSize+1024)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, message string
		layer         []byte
	}{
		{"too-large", fmt.Sprintf("more than the limit of %d", maxOCILayerSize), testtar.TarGz(t, testtar.File("blob", string(big)))},
		{"extracts-too-large", fmt.Sprintf("would exceed the limit of %d extracted bytes", maxOCIExtractedSize),
			testtar.TarGz(t, testtar.File("zeros", string(make([]byte, maxOCIExtractedSize+1))))},
		{"traversal", "unsafe path", testtar.TarGz(t, testtar.File("../../etc/cron.d/evil", "* * * * * root true\n"))},
		{"symlink", "symlink leaves the root", testtar.TarGz(t, testtar.Symlink("passwd", "../../../etc/passwd"))},
		{"not-gzip", "not gzip", []byte("plain text, not an archive\n")},
	}
	ns := namespace(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			url := "oci://" + reg.Host() + "/hostile/" + c.name
			pushLayers(t, url+":latest", nil, static.NewLayer(c.layer, ociartifact.ContentMediaType))
			o := newOCIRepository(ns, c.name, url, nil)
			g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
			waitHelmFailed(t, o, sourcev1.OCILayerOperationFailedReason)
			g.Expect(conditionOf(o, meta.ReadyCondition).Message).To(ContainSubstring(c.message))
			g.Expect(conditionOf(o, meta.StalledCondition)).NotTo(BeNil())
			fetch := conditionOf(o, sourcev1.FetchFailedCondition)
			g.Expect(fetch.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(fetch.Reason).To(Equal(sourcev1.OCILayerOperationFailedReason))
			g.Expect(o.Status.Artifact).To(BeNil())
			_, err := os.Stat(filepath.Join(storage.BasePath, "ocirepository", ns, c.name))
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "stat: %v", err)
		})
	}
}

// A registry behind basic auth: without a Secret the pull is refused
// (AuthenticationFailed); with a docker-registry Secret it succeeds.
func TestOCIRepositoryCredentialsFromADockerConfigSecret(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{Username: "robot", Password: "s3cret"})
	url := "oci://" + reg.Host() + "/private"
	digest := pushDir(t, url+":v1", map[string]string{"cm.yaml": configMap("private")},
		&authn.Basic{Username: "robot", Password: "s3cret"})
	ns := namespace(t)

	anonymous := newOCIRepository(ns, "anonymous", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	g.Expect(k8s.Create(context.Background(), anonymous)).To(Succeed())
	waitHelmFailed(t, anonymous, sourcev1.AuthenticationFailedReason)

	missing := newOCIRepository(ns, "missing-secret", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	missing.Spec.SecretRef = &meta.LocalObjectReference{Name: "absent"}
	g.Expect(k8s.Create(context.Background(), missing)).To(Succeed())
	waitHelmFailed(t, missing, sourcev1.AuthenticationFailedReason)
	g.Expect(conditionOf(missing, meta.ReadyCondition).Message).To(ContainSubstring("Secret " + ns + "/absent not found"))

	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"` + reg.Host() + `":{"auth":"` + auth + `"}}}`)},
	}
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	o := newOCIRepository(ns, "private", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	o.Spec.SecretRef = &meta.LocalObjectReference{Name: "registry"}
	g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
	waitHelmReady(t, o, "v1@"+digest)
	g.Expect(files(t, download(t, o.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("private")}))
}

// Fields Plumb does not implement are refused at admission, and so is a
// URL with a tag.
func TestOCIRepositoryRefusesUnknownFieldsAndATaggedURL(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	bad := newOCIRepository(ns, "tagged", "oci://ghcr.io/org/repo@sha256:"+strings.Repeat("a", 64), nil)
	err := k8s.Create(context.Background(), bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.url"))

	u := map[string]any{
		"apiVersion": sourcev1.GroupVersion.String(), "kind": sourcev1.OCIRepositoryKind,
		"metadata": map[string]any{"namespace": ns, "name": "provider"},
		"spec": map[string]any{
			"url": "oci://ghcr.io/org/repo", "interval": "5m",
			"provider": "aws",
		},
	}
	err = createStrict(u)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`unknown field "spec.provider"`))
}

// --- helpers ---

// counterValue reads a counter of the object from the metrics registry
// the reconcilers register with.
func counterValue(t *testing.T, metric, namespace, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == namespace && labels["name"] == name {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// createStrict creates u with strict field validation, as kubectl apply
// --validate=strict does.
func createStrict(u map[string]any) error {
	return k8s.Create(context.Background(), &unstructured.Unstructured{Object: u}, client.FieldValidation(metav1.FieldValidationStrict))
}

func newRegistry(t *testing.T, opts testhelm.RegistryOptions) *testhelm.Registry {
	t.Helper()
	reg, err := testhelm.NewRegistry(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}

func newOCIRepository(ns, name, url string, ref *sourcev1.OCIRepositoryRef) *sourcev1.OCIRepository {
	return &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.OCIRepositorySpec{
			URL:       url,
			Reference: ref,
			Insecure:  true,
			Interval:  metav1.Duration{Duration: time.Hour},
			Timeout:   &metav1.Duration{Duration: 20 * time.Second},
		},
	}
}

func configMap(v string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  version: " + v + "\n"
}

// digestOf returns the sha256:<hex> of a revision.
func digestOf(revision string) string {
	if _, d, ok := strings.Cut(revision, "@"); ok {
		return d
	}
	return revision
}

// pushDir writes files into a folder and pushes it as `plumb push
// artifact` does, returning the manifest digest.
func pushDir(t *testing.T, url string, content map[string]string, auth authn.Authenticator) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range content {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := ociartifact.Push(context.Background(), url, dir, ociartifact.PushOptions{
		Source:   "https://github.com/example/podinfo",
		Revision: "main@sha1:0123456789abcdef0123456789abcdef01234567",
		Insecure: true,
		Auth:     auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, d, _ := strings.Cut(ref, "@")
	return d
}

// pushLayers pushes a manifest of the given layers, built with
// go-containerregistry directly (for layers Push would never make).
func pushLayers(t *testing.T, url string, auth authn.Authenticator, layers ...v1.Layer) {
	t.Helper()
	ref, err := name.NewTag(strings.TrimPrefix(url, "oci://"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ociartifact.ConfigMediaType)
	for _, l := range layers {
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l}); err != nil {
			t.Fatal(err)
		}
	}
	opts := []remote.Option{}
	if auth != nil {
		opts = append(opts, remote.WithAuth(auth))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
}
