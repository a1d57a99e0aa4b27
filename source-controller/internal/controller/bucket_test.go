package controller

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// fakeS3 is gofakes3 on 127.0.0.1 behind a check of the signature's
// access key (gofakes3 checks none), counting object downloads.
type fakeS3 struct {
	backend   *s3mem.Backend
	host      string
	downloads atomic.Int32
}

const (
	s3AccessKey = "plumb-access"
	s3SecretKey = "plumb-secret"
)

func newFakeS3(t *testing.T, buckets ...string) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	s3 := gofakes3.New(f.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+s3AccessKey+"/") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The access key does not exist.</Message></Error>`)
			return
		}
		// GET /<bucket>/<key>, but not the root .sourceignore.
		if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2); r.Method == http.MethodGet &&
			len(parts) == 2 && parts[1] != "" && parts[1] != ".sourceignore" {
			f.downloads.Add(1)
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.host = strings.TrimPrefix(srv.URL, "http://")
	for _, b := range buckets {
		if err := f.backend.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakeS3) put(t *testing.T, bucket string, objects map[string]string) {
	t.Helper()
	for k, v := range objects {
		// What gofakes3 records of an upload through its API.
		meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
		if _, err := f.backend.PutObject(bucket, k, meta, strings.NewReader(v), int64(len(v)), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// bucketRevision is Flux's revision of objects, written out here from
// its definition: sha256 of "<key> <etag>\n" by key, the ETag being the
// MD5 of the content for a plain upload.
func bucketRevision(objects map[string]string) string {
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var index strings.Builder
	for _, k := range keys {
		sum := md5.Sum([]byte(objects[k]))
		index.WriteString(k + " " + hex.EncodeToString(sum[:]) + "\n")
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(index.String())))
}

func newBucket(ns, name, endpoint, bucketName string, secret *meta.LocalObjectReference) *sourcev1.Bucket {
	return &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.BucketSpec{
			BucketName: bucketName,
			Endpoint:   endpoint,
			Insecure:   true,
			Region:     "us-east-1",
			SecretRef:  secret,
			Interval:   metav1.Duration{Duration: time.Hour},
			Timeout:    &metav1.Duration{Duration: 20 * time.Second},
		},
	}
}

// s3Credentials creates the Secret of the fake's keys and returns its
// reference.
func s3Credentials(t *testing.T, ns string) *meta.LocalObjectReference {
	credentials(t, ns, "s3", map[string]string{"accesskey": s3AccessKey, "secretkey": s3SecretKey})
	return &meta.LocalObjectReference{Name: "s3"}
}

// A Bucket's artifact holds its objects under Flux's revision; a listing
// that finds the same objects downloads nothing and keeps the artifact,
// and a changed object is a new revision.
func TestBucketFollowsItsObjects(t *testing.T) {
	g := NewWithT(t)
	s3 := newFakeS3(t, "manifests")
	objects := map[string]string{"deploy/cm.yaml": configMap("one"), "README.md": "# notes\n"}
	s3.put(t, "manifests", objects)
	ns := namespace(t)
	b := newBucket(ns, "app", s3.host, "manifests", s3Credentials(t, ns))
	g.Expect(k8s.Create(context.Background(), b)).To(Succeed())
	waitHelmReady(t, b, bucketRevision(objects))
	rev := strings.TrimPrefix(b.Status.Artifact.Revision, "sha256:")
	g.Expect(b.Status.Artifact.Path).To(Equal("bucket/" + ns + "/app/" + rev + ".tar.gz"))
	g.Expect(files(t, download(t, b.Status.Artifact))).To(Equal(objects))
	g.Expect(conditionOf(b, sourcev1.ArtifactInStorageCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(b.Finalizers).To(ContainElement(Finalizer))
	fetches := func() float64 { return counterValue(t, "plumb_source_bucket_fetches_total", ns, "app") }
	g.Expect(fetches()).To(Equal(1.0))
	g.Expect(s3.downloads.Load()).To(BeEquivalentTo(2))
	first := b.Status.Artifact.DeepCopy()

	requestHelmReconcile(t, b, "unchanged")
	waitHelmReady(t, b, first.Revision)
	g.Expect(b.Status.Artifact).To(Equal(first), "the same objects make no new artifact")
	g.Expect(fetches()).To(Equal(1.0))
	g.Expect(s3.downloads.Load()).To(BeEquivalentTo(2), "the same objects are not downloaded again")

	objects["deploy/cm.yaml"] = configMap("two")
	s3.put(t, "manifests", map[string]string{"deploy/cm.yaml": configMap("two")})
	requestHelmReconcile(t, b, "changed")
	waitHelmReady(t, b, bucketRevision(objects))
	g.Expect(b.Status.Artifact.Revision).NotTo(Equal(first.Revision))
	g.Expect(files(t, download(t, b.Status.Artifact))).To(Equal(objects))
	g.Expect(fetches()).To(Equal(2.0))
}

// spec.prefix lists only the keys under it; spec.ignore and the bucket's
// root .sourceignore leave keys out of the revision and the artifact.
func TestBucketPrefixAndIgnore(t *testing.T) {
	g := NewWithT(t)
	s3 := newFakeS3(t, "mixed")
	s3.put(t, "mixed", map[string]string{
		".sourceignore":   "*.tmp\n",
		"apps/cm.yaml":    configMap("apps"),
		"apps/notes.md":   "# notes\n",
		"apps/build.tmp":  "scratch\n",
		"apps/folder/":    "",
		"other/cm.yaml":   configMap("other"),
		"appsettings.txt": "not under apps/\n",
	})
	ns := namespace(t)
	b := newBucket(ns, "apps", s3.host, "mixed", s3Credentials(t, ns))
	b.Spec.Prefix = "apps/"
	b.Spec.Ignore = ptr("*.md\n")
	g.Expect(k8s.Create(context.Background(), b)).To(Succeed())
	kept := map[string]string{"apps/cm.yaml": configMap("apps")}
	waitHelmReady(t, b, bucketRevision(kept))
	g.Expect(files(t, download(t, b.Status.Artifact))).To(Equal(kept))
	g.Expect(b.Status.ObservedIgnore).To(Equal(ptr("*.md\n")))
}

// A Secret without Flux's keys, or keys the server refuses, fails with
// AuthenticationFailed and a message saying what is wrong, and the last
// artifact keeps being served.
func TestBucketCredentialFailuresKeepTheLastArtifact(t *testing.T) {
	g := NewWithT(t)
	s3 := newFakeS3(t, "secure")
	objects := map[string]string{"cm.yaml": configMap("secure")}
	s3.put(t, "secure", objects)
	ns := namespace(t)
	b := newBucket(ns, "secure", s3.host, "secure", s3Credentials(t, ns))
	g.Expect(k8s.Create(context.Background(), b)).To(Succeed())
	waitHelmReady(t, b, bucketRevision(objects))
	good := b.Status.Artifact.DeepCopy()

	setSecret := func(data map[string]string) {
		var s corev1.Secret
		g.Expect(k8s.Get(context.Background(), keyOf(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"}}), &s)).To(Succeed())
		s.Data, s.StringData = nil, data
		g.Expect(k8s.Update(context.Background(), &s)).To(Succeed())
	}
	setSecret(map[string]string{"access_key": s3AccessKey, "secret_key": s3SecretKey})
	requestHelmReconcile(t, b, "wrong-keys")
	waitHelmFailed(t, b, sourcev1.AuthenticationFailedReason)
	ready := conditionOf(b, meta.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("spec.secretRef: Secret " + ns + "/s3 must hold the keys accesskey and secretkey; it has [access_key, secret_key]"))
	g.Expect(b.Status.Artifact).To(Equal(good))
	g.Expect(conditionOf(b, sourcev1.FetchFailedCondition).Status).To(Equal(metav1.ConditionTrue))

	setSecret(map[string]string{"accesskey": "someone-else", "secretkey": s3SecretKey})
	requestHelmReconcile(t, b, "refused-keys")
	waitHelmFailed(t, b, sourcev1.AuthenticationFailedReason)
	g.Expect(conditionOf(b, meta.ReadyCondition).Message).To(ContainSubstring("InvalidAccessKeyId: The access key does not exist."))
	g.Expect(b.Status.Artifact).To(Equal(good))
	g.Expect(download(t, b.Status.Artifact)).NotTo(BeEmpty(), "the last artifact is still served")
}

// More objects, or larger ones, than the limits are refused before any
// download (LimitExceeded, stalled until the next interval) and the last
// artifact keeps being served.
func TestBucketOverALimitIsRefusedAndTheLastArtifactKept(t *testing.T) {
	ns := namespace(t)
	creds := s3Credentials(t, ns)
	cases := []struct {
		name  string
		add   map[string]string
		wants string
	}{
		{"object-size", map[string]string{"big.yaml": strings.Repeat("x", maxBucketObjectSize+1)}, "(--bucket-max-object-size)"},
		{"objects", manyObjects(maxBucketObjects), fmt.Sprintf("more than %d objects to fetch (--bucket-max-objects)", maxBucketObjects)},
		{"total-size", manyLarge(5, maxBucketObjectSize), fmt.Sprintf("more than %d bytes together (--bucket-max-size)", maxBucketSize)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			s3 := newFakeS3(t, "limited")
			objects := map[string]string{"cm.yaml": configMap(c.name)}
			s3.put(t, "limited", objects)
			b := newBucket(ns, c.name, s3.host, "limited", creds)
			g.Expect(k8s.Create(context.Background(), b)).To(Succeed())
			waitHelmReady(t, b, bucketRevision(objects))
			good := b.Status.Artifact.DeepCopy()
			before := s3.downloads.Load()

			s3.put(t, "limited", c.add)
			requestHelmReconcile(t, b, "over")
			waitHelmFailed(t, b, meta.LimitExceededReason)
			g.Expect(conditionOf(b, meta.ReadyCondition).Message).To(ContainSubstring(c.wants))
			g.Expect(conditionOf(b, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(b.Status.Artifact).To(Equal(good))
			g.Expect(s3.downloads.Load()).To(Equal(before), "nothing is downloaded past a limit")
			g.Expect(files(t, download(t, b.Status.Artifact))).To(Equal(objects))
		})
	}
}

func manyObjects(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("many/%02d.yaml", i)] = configMap(fmt.Sprint(i))
	}
	return out
}

func manyLarge(n, size int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("large/%d.yaml", i)] = strings.Repeat(fmt.Sprint(i), size)
	}
	return out
}

// A HelmChart builds its chart from the folder spec.chart names in a
// Bucket's artifact, as from a GitRepository's.
func TestHelmChartFromBucket(t *testing.T) {
	g := NewWithT(t)
	files, err := testhelm.ChartFiles(configMapChart("app", "0.3.0"), "charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	s3 := newFakeS3(t, "charts")
	s3.put(t, "charts", files)
	ns := namespace(t)
	b := newBucket(ns, "charts", s3.host, "charts", s3Credentials(t, ns))
	g.Expect(k8s.Create(context.Background(), b)).To(Succeed())
	waitHelmReady(t, b, bucketRevision(files))

	hc := newHelmChart(ns, "app", "charts/app", "", sourcev1.BucketKind, "charts")
	g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
	waitHelmReady(t, hc, "0.3.0")
	g.Expect(hc.Status.ObservedSourceArtifactRevision).To(Equal(b.Status.Artifact.Revision))
	ch, _ := loadChart(t, hc.Status.Artifact)
	g.Expect(ch.Metadata.Name).To(Equal("app"))
}

// The API server refuses what Plumb does not implement with a message
// saying so, and accepts a Bucket as the source of a Kustomization and a
// HelmChart.
func TestBucketIsCheckedAtAdmission(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	secret := &meta.LocalObjectReference{Name: "s3"}
	cases := []struct {
		name  string
		edit  func(*sourcev1.Bucket)
		wants string
	}{
		{"gcp", func(b *sourcev1.Bucket) { b.Spec.Provider = "gcp" }, "only generic and aws (with the static credentials of spec.secretRef) are implemented"},
		{"aws-without-secret", func(b *sourcev1.Bucket) { b.Spec.Provider = "aws"; b.Spec.SecretRef = nil }, "AWS workload identity and instance credentials are not implemented"},
		{"sts", func(b *sourcev1.Bucket) {
			b.Spec.STS = &apiextensionsv1.JSON{Raw: []byte(`{"provider":"ldap","endpoint":"https://sts.example.com"}`)}
		}, "spec.sts is not implemented"},
		{"endpoint-url", func(b *sourcev1.Bucket) { b.Spec.Endpoint = "https://minio.example.com/path" }, "spec.endpoint is host[:port]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBucket(ns, c.name, "minio.example.com:9000", "b", secret)
			c.edit(b)
			err := k8s.Create(ctx, b)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(c.wants)))
		})
	}

	g := NewWithT(t)
	aws := newBucket(ns, "aws", "s3.amazonaws.com", "b", secret)
	aws.Spec.Provider = sourcev1.BucketProviderAmazon
	aws.Spec.Suspend = true
	g.Expect(k8s.Create(ctx, aws)).To(Succeed())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-bucket"},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.BucketKind, Name: "aws"},
			Interval:  metav1.Duration{Duration: time.Hour},
			Suspend:   true,
		},
	}
	g.Expect(k8s.Create(ctx, ks)).To(Succeed())
	hc := newHelmChart(ns, "from-bucket", "charts/app", "", sourcev1.BucketKind, "aws")
	hc.Spec.Suspend = true
	g.Expect(k8s.Create(ctx, hc)).To(Succeed())
}
