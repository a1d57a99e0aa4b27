package controller

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// An HTTP repository behind basic auth: the index is stored as a digest
// addressed artifact, a chart's semver range resolves against it, a new
// version is picked up through the repository's new artifact, and a
// broken index fails the repository while the last good index (and the
// charts built from it) stay.
func TestHelmRepositoryIndexAndChartVersions(t *testing.T) {
	g := NewWithT(t)
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer repo.Close()
	for _, v := range []string{"1.0.0", "1.0.1", "1.1.0", "2.0.0"} {
		g.Expect(repo.Add(configMapChart("podinfo", v))).To(Succeed())
	}
	ns := namespace(t)
	credentials(t, ns, "helm-auth", map[string]string{"username": "helm", "password": "s3cret"})

	hr := newHelmRepository(ns, "podinfo", repo.URL(), &meta.LocalObjectReference{Name: "helm-auth"})
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	index, err := repo.Index()
	g.Expect(err).NotTo(HaveOccurred())
	waitHelmReady(t, hr, helm.Digest(index))
	a := hr.Status.Artifact
	g.Expect(a.Digest).To(Equal(helm.Digest(index)))
	g.Expect(a.Path).To(Equal("helmrepository/" + ns + "/podinfo/index-" + strings.TrimPrefix(a.Digest, "sha256:") + ".yaml"))
	g.Expect(hr.Status.URL).To(Equal(a.URL))
	g.Expect(string(download(t, a))).To(Equal(string(index)))
	g.Expect(conditionOf(hr, sourcev1.ArtifactInStorageCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(hr.Finalizers).To(ContainElement(Finalizer))

	hc := newHelmChart(ns, "podinfo", "podinfo", "~1.0", sourcev1.HelmRepositoryKind, "podinfo")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "1.0.1")
	ch, _ := loadChart(t, hc.Status.Artifact)
	g.Expect(ch.Metadata.Version).To(Equal("1.0.1"))
	g.Expect(hc.Status.ObservedChartName).To(Equal("podinfo"))
	g.Expect(hc.Status.ObservedSourceArtifactRevision).To(Equal(a.Revision))
	g.Expect(hc.Status.Artifact.Path).To(MatchRegexp(`^helmchart/` + ns + `/podinfo/podinfo-1\.0\.1-[a-f0-9]{64}\.tgz$`))

	// A new version in range: the repository's new artifact brings the
	// chart back, which picks it.
	g.Expect(repo.Add(configMapChart("podinfo", "1.0.2"))).To(Succeed())
	requestHelmReconcile(t, hr, "new-version")
	index, err = repo.Index()
	g.Expect(err).NotTo(HaveOccurred())
	waitHelmReady(t, hr, helm.Digest(index))
	waitHelmReady(t, hc, "1.0.2")
	g.Expect(hc.Status.ObservedSourceArtifactRevision).To(Equal(helm.Digest(index)))
	good := hr.Status.Artifact.DeepCopy()

	// A broken index: Ready=False, FetchFailed, an event; the last good
	// index stays in status and storage, the chart keeps its version.
	repo.SetIndex([]byte("apiVersion: v1\nentries: [this is not: an index\n"))
	requestHelmReconcile(t, hr, "broken")
	waitHelmFailed(t, hr, sourcev1.IndexationFailedReason)
	g.Expect(hr.Status.Artifact).To(Equal(good))
	g.Expect(storage.Verify(good)).To(Succeed())
	fetch := conditionOf(hr, sourcev1.FetchFailedCondition)
	g.Expect(fetch).NotTo(BeNil())
	g.Expect(fetch.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(fetch.Message).To(ContainSubstring("invalid index.yaml"))
	g.Expect(conditionOf(hr, meta.ReadyCondition).Message).To(ContainSubstring("serving the last good index"))
	evs := streamEvents(t, events.Subject(sourcev1.HelmRepositoryKind, ns, "podinfo"), 3)
	g.Expect(evs[0].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[1].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[2].Reason).To(Equal(sourcev1.IndexationFailedReason))
	g.Expect(evs[2].Severity).To(Equal(events.SeverityError))
	requestHelmReconcile(t, hc, "after-broken")
	waitHelmReady(t, hc, "1.0.2")

	// An index without apiVersion is refused as well.
	repo.SetIndex([]byte("entries: {}\n"))
	requestHelmReconcile(t, hr, "no-api-version")
	waitHelmFailed(t, hr, sourcev1.IndexationFailedReason)
	g.Expect(hr.Status.Artifact).To(Equal(good))

	// Fixed: Ready again.
	repo.SetIndex(nil)
	requestHelmReconcile(t, hr, "fixed")
	waitHelmReady(t, hr, good.Revision)
	g.Expect(conditionOf(hr, sourcev1.FetchFailedCondition)).To(BeNil())

	// Deleting the repository removes its artifacts.
	g.Expect(k8s.Delete(context.Background(), hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), keyOf(hr), &sourcev1.HelmRepository{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}, timeout, poll).Should(Succeed())
	g.Expect(storage.Exists(good)).To(BeFalse())
}

func TestHelmRepositoryCredentials(t *testing.T) {
	g := NewWithT(t)
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret"})
	g.Expect(err).NotTo(HaveOccurred())
	defer repo.Close()
	g.Expect(repo.Add(configMapChart("podinfo", "1.0.0"))).To(Succeed())
	ns := namespace(t)

	// No Secret at all: the server refuses.
	anon := newHelmRepository(ns, "anonymous", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), anon)).To(Succeed())
	waitHelmFailed(t, anon, sourcev1.AuthenticationFailedReason)
	g.Expect(anon.Status.Artifact).To(BeNil())

	// A Secret that does not exist.
	missing := newHelmRepository(ns, "missing", repo.URL(), &meta.LocalObjectReference{Name: "nope"})
	g.Expect(k8s.Create(context.Background(), missing)).To(Succeed())
	waitHelmFailed(t, missing, sourcev1.AuthenticationFailedReason)
	g.Expect(conditionOf(missing, meta.ReadyCondition).Message).To(ContainSubstring("not found"))

	// Wrong password.
	credentials(t, ns, "wrong", map[string]string{"username": "helm", "password": "guess"})
	wrong := newHelmRepository(ns, "wrong", repo.URL(), &meta.LocalObjectReference{Name: "wrong"})
	g.Expect(k8s.Create(context.Background(), wrong)).To(Succeed())
	waitHelmFailed(t, wrong, sourcev1.AuthenticationFailedReason)
}

// TLS with a client certificate from certSecretRef, and from secretRef
// alone; a CA that does not sign the server fails.
func TestHelmRepositoryTLS(t *testing.T) {
	g := NewWithT(t)
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "helm", Password: "s3cret", TLS: true, ClientAuth: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer repo.Close()
	g.Expect(repo.Add(configMapChart("podinfo", "1.0.0"))).To(Succeed())
	ns := namespace(t)
	cert, key := repo.ClientCert()
	credentials(t, ns, "auth", map[string]string{"username": "helm", "password": "s3cret"})
	credentials(t, ns, "tls", map[string]string{"tls.crt": string(cert), "tls.key": string(key), "ca.crt": string(repo.CA())})
	credentials(t, ns, "both", map[string]string{"username": "helm", "password": "s3cret",
		"tls.crt": string(cert), "tls.key": string(key), "ca.crt": string(repo.CA())})

	index, err := repo.Index()
	g.Expect(err).NotTo(HaveOccurred())
	withCertSecret := newHelmRepository(ns, "cert-secret", repo.URL(), &meta.LocalObjectReference{Name: "auth"})
	withCertSecret.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "tls"}
	g.Expect(k8s.Create(context.Background(), withCertSecret)).To(Succeed())
	waitHelmReady(t, withCertSecret, helm.Digest(index))

	inSecret := newHelmRepository(ns, "secret", repo.URL(), &meta.LocalObjectReference{Name: "both"})
	g.Expect(k8s.Create(context.Background(), inSecret)).To(Succeed())
	waitHelmReady(t, inSecret, helm.Digest(index))

	hc := newHelmChart(ns, "podinfo", "podinfo", "", sourcev1.HelmRepositoryKind, "cert-secret")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "1.0.0")

	// Without the CA the server's certificate is not trusted.
	noTLS := newHelmRepository(ns, "no-ca", repo.URL(), &meta.LocalObjectReference{Name: "auth"})
	g.Expect(k8s.Create(context.Background(), noTLS)).To(Succeed())
	waitHelmFailed(t, noTLS, sourcev1.IndexationFailedReason)
	g.Expect(conditionOf(noTLS, meta.ReadyCondition).Message).To(ContainSubstring("certificate"))
}

// An index larger than --helm-index-max-size is refused before it is
// parsed.
func TestHelmRepositoryIndexSizeIsBounded(t *testing.T) {
	g := NewWithT(t)
	repo := newTestRepo(t)
	repo.SetIndex([]byte("apiVersion: v1\nentries: {}\n# " + strings.Repeat("x", maxIndexSize+1) + "\n"))
	ns := namespace(t)
	hr := newHelmRepository(ns, "huge", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmFailed(t, hr, sourcev1.IndexationFailedReason)
	g.Expect(conditionOf(hr, meta.ReadyCondition).Message).To(ContainSubstring("larger than the limit"))
	g.Expect(hr.Status.Artifact).To(BeNil())
}

// An OCI repository has no artifact: its settings are checked and it is
// Ready; a malformed URL stalls.
func TestHelmRepositoryOCI(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	hr := newHelmRepository(ns, "oci", "oci://127.0.0.1:5000/charts", nil)
	hr.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	hr.Spec.Insecure = true
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmReady(t, hr, "")
	g.Expect(hr.Status.Artifact).To(BeNil())
	g.Expect(hr.Status.URL).To(BeEmpty())
	g.Expect(conditionOf(hr, sourcev1.ArtifactInStorageCondition)).To(BeNil())

	bad := newHelmRepository(ns, "bad", "oci://127.0.0.1:5000/charts:1.0.0", nil)
	bad.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	g.Expect(k8s.Create(context.Background(), bad)).To(Succeed())
	waitHelmFailed(t, bad, meta.InvalidSpecReason)
	g.Expect(conditionOf(bad, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))

	credentials(t, ns, "half", map[string]string{"username": "only"})
	half := newHelmRepository(ns, "half", "oci://127.0.0.1:5000/charts", &meta.LocalObjectReference{Name: "half"})
	half.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	g.Expect(k8s.Create(context.Background(), half)).To(Succeed())
	waitHelmFailed(t, half, sourcev1.AuthenticationFailedReason)
}

// Suspended: nothing is fetched.
func TestHelmRepositorySuspend(t *testing.T) {
	g := NewWithT(t)
	repo := newTestRepo(t)
	ns := namespace(t)
	hr := newHelmRepository(ns, "suspended", repo.URL(), nil)
	hr.Spec.Suspend = true
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	expectLeftAlone(t, hr)
	g.Expect(repo.Requests("/index.yaml")).To(BeZero())

	patch := client.MergeFrom(hr.DeepCopy())
	hr.Spec.Suspend = false
	g.Expect(k8s.Patch(context.Background(), hr, patch)).To(Succeed())
	index, err := repo.Index()
	g.Expect(err).NotTo(HaveOccurred())
	waitHelmReady(t, hr, helm.Digest(index))
}

// spec.timeout bounds the request for the index.
func TestHelmRepositoryTimeout(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	ns := namespace(t)
	hr := newHelmRepository(ns, "slow", slow.URL, nil)
	hr.Spec.Timeout = &metav1.Duration{Duration: 500 * time.Millisecond}
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmFailed(t, hr, sourcev1.IndexationFailedReason)
	g.Expect(conditionOf(hr, meta.ReadyCondition).Message).To(ContainSubstring("timed out (spec.timeout 500ms)"))
}

// An https:// repository redirecting to plain http:// is refused before
// anything, credentials included, goes there.
func TestHelmRepositoryRedirectToHTTPIsRefused(t *testing.T) {
	g := NewWithT(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the plain HTTP server: %s", r.URL)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer secure.Close()
	ns := namespace(t)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})
	credentials(t, ns, "auth", map[string]string{"username": "u", "password": "p", "ca.crt": string(caPEM)})
	hr := newHelmRepository(ns, "redirect", secure.URL, &meta.LocalObjectReference{Name: "auth"})
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmFailed(t, hr, meta.InsecureConnectionsDisallowedReason)
	g.Expect(conditionOf(hr, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
}

// A stored index changed on disk is stored again (ArtifactRebuilt); so is
// a HelmChart's chart.
func TestHelmArtifactsAreRebuiltWhenAltered(t *testing.T) {
	g := NewWithT(t)
	repo := newTestRepo(t, configMapChart("podinfo", "1.0.0"))
	ns := namespace(t)
	hr := newHelmRepository(ns, "podinfo", repo.URL(), nil)
	g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	waitHelmReady(t, hr, "")
	hc := newHelmChart(ns, "podinfo", "podinfo", "", sourcev1.HelmRepositoryKind, "podinfo")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "1.0.0")

	for _, obj := range []helmObject{hr, hc} {
		a := artifactOf(obj).DeepCopy()
		g.Expect(os.WriteFile(storage.LocalPath(a.Path), []byte("tampered"), 0o644)).To(Succeed())
		requestHelmReconcile(t, obj, "tampered")
		waitHelmReady(t, obj, a.Revision)
		g.Expect(artifactOf(obj).Digest).To(Equal(a.Digest))
		g.Expect(storage.Verify(artifactOf(obj))).To(Succeed())
	}
	for _, kind := range []string{sourcev1.HelmRepositoryKind, sourcev1.HelmChartKind} {
		evs := streamEvents(t, events.Subject(kind, ns, "podinfo"), 2)
		g.Expect(evs[1].Reason).To(Equal(sourcev1.ArtifactRebuiltReason), kind)
	}
}
