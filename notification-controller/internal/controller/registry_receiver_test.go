package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// nexusComponentCreated is a Nexus Repository component webhook body.
const nexusComponentCreated = `{"timestamp":"2026-12-01T20:00:00.000+0000","nodeId":"52905B51-085CCABB-CEBBEAAD-16795588-FC927D93","initiator":"ci/10.0.0.7","repositoryName":"docker-hosted","action":"CREATED","component":{"id":"08909bf0c86cf6c9600aade89e1c5e25","format":"docker","name":"org/manifests","version":"1.4.0"}}`

// TestNexusReceiverReconcilesTheOCIRepository: a push to Nexus, signed
// with the token, annotates the OCIRepository the Receiver names; a wrong
// signature is 401 and annotates nothing.
func TestNexusReceiverReconcilesTheOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	oci, rcv := ociReceiver(t, ns, notificationv1.NexusReceiver)
	body := []byte(nexusComponentCreated)

	forged := hmac.New(sha1.New, []byte("not the token"))
	forged.Write(body)
	code, msg := post(t, rcv.Status.WebhookPath, map[string]string{"X-Nexus-Webhook-Signature": hex.EncodeToString(forged.Sum(nil))}, body)
	g.Expect(code).To(Equal(http.StatusUnauthorized), msg)
	g.Expect(requestedAt(t, oci)).To(BeEmpty())

	mac := hmac.New(sha1.New, []byte(hookToken))
	mac.Write(body)
	code, msg = post(t, rcv.Status.WebhookPath, map[string]string{"X-Nexus-Webhook-Signature": hex.EncodeToString(mac.Sum(nil))}, body)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("CREATED event: requested a reconcile of OCIRepository/manifests"))
	g.Expect(requestedAt(t, oci)).NotTo(BeEmpty())
}

// ociRepository creates an OCIRepository for a Receiver to name.
func ociRepository(t *testing.T, ns, name string) *sourcev1.OCIRepository {
	t.Helper()
	oci := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example/org/" + name, Interval: metav1.Duration{Duration: time.Hour}},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), oci)).To(Succeed())
	return oci
}

// ociReceiver creates the OCIRepository "manifests" and a Ready Receiver
// of type typ (and name typ) that names it.
func ociReceiver(t *testing.T, ns, typ string) (*sourcev1.OCIRepository, *notificationv1.Receiver) {
	t.Helper()
	oci := ociRepository(t, ns, "manifests")
	return oci, createReceiver(t, ns, typ, typ, func(s *notificationv1.ReceiverSpec) {
		s.Resources = []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.OCIRepositoryKind, Name: oci.Name}}
	})
}

// TestGCRReceiverNeedsEmailAndAudience: without the keys its ID tokens are
// checked against, a gcr Receiver is not Ready and says which key is
// missing.
func TestGCRReceiverNeedsEmailAndAudience(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, ns, "gcr-token", map[string]string{"token": hookToken, "email": "push@p.iam.gserviceaccount.com"})
	rcv := genericReceiver(ns, "gcr", "gcr-token")
	rcv.Spec.Type = notificationv1.GCRReceiver
	g.Expect(k8s.Create(context.Background(), rcv)).To(Succeed())
	cond := waitReady(t, rcv, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.SecretNotReadyReason))
	g.Expect(cond.Message).To(ContainSubstring(`has no key "audience"`))
	g.Expect(cond.Message).NotTo(ContainSubstring(hookToken))
}

// TestDockerHubReceiverTakesOnlyAPush: Docker Hub signs nothing, so the
// body must be its push payload: anything else is 400 and annotates
// nothing.
func TestDockerHubReceiverTakesOnlyAPush(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	oci, rcv := ociReceiver(t, ns, notificationv1.DockerHubReceiver)
	code, msg := post(t, rcv.Status.WebhookPath, nil, []byte(`{"ref":"refs/heads/main"}`))
	g.Expect(code).To(Equal(http.StatusBadRequest), msg)
	g.Expect(msg).To(ContainSubstring("dockerhub: push_data and repository are required"))
	g.Expect(requestedAt(t, oci)).To(BeEmpty())

	push := `{"callback_url":"https://registry.hub.docker.com/u/org/app/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/","push_data":{"pushed_at":1764619200,"pusher":"ci","tag":"v1.4.0"},"repository":{"name":"app","namespace":"org","repo_name":"org/app","repo_url":"https://registry.hub.docker.com/u/org/app/","is_private":true,"status":"Active"}}`
	code, msg = post(t, rcv.Status.WebhookPath, nil, []byte(push))
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(requestedAt(t, oci)).NotTo(BeEmpty())
}

// TestGenericReceiverReconcilesABucket: a Bucket is a kind a Receiver may
// name (pkg/kinds: it records reconcile requests); a call annotates it.
func TestGenericReceiverReconcilesABucket(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	bucket := &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manifests"},
		Spec:       sourcev1.BucketSpec{BucketName: "manifests", Endpoint: "minio.example.com", Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8s.Create(context.Background(), bucket)).To(Succeed())
	rcv := createReceiver(t, ns, "bucket", notificationv1.GenericReceiver, func(s *notificationv1.ReceiverSpec) {
		s.Resources = []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.BucketKind, Name: bucket.Name}}
	})
	code, msg := post(t, rcv.Status.WebhookPath, nil, nil)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("Bucket/manifests"))
	g.Expect(requestedAt(t, bucket)).NotTo(BeEmpty())
}

// TestRegistryReceiverScansAnImageRepository: a registry push names an
// ImageRepository (image-controller's kind, which records reconcile
// requests), and the call annotates it so that it scans at once.
func TestRegistryReceiverScansAnImageRepository(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	repo := &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec:       imagev1.ImageRepositorySpec{Image: "registry.example/org/app", Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	rcv := createReceiver(t, ns, "images", notificationv1.DockerHubReceiver, func(s *notificationv1.ReceiverSpec) {
		s.Resources = []notificationv1.CrossNamespaceObjectReference{{Kind: imagev1.ImageRepositoryKind, Name: "*"}}
	})
	push := `{"push_data":{"pushed_at":1764619200,"pusher":"ci","tag":"v1.4.0"},"repository":{"name":"app","namespace":"org","repo_name":"org/app"}}`
	code, msg := post(t, rcv.Status.WebhookPath, nil, []byte(push))
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("ImageRepository/app"))
	g.Expect(requestedAt(t, repo)).NotTo(BeEmpty())
}

// TestGitHubPullRequestEventRelistsAnObjectSet: a set's pullRequests
// generator polls its host every requeueAfterSeconds; a GitHub
// Receiver naming the set turns a pull_request event into a reconcile
// request at once.
func TestGitHubPullRequestEventRelistsAnObjectSet(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	set := &setv1.ObjectSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "previews"},
		Spec: setv1.ObjectSetSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Generators: []setv1.Generator{{PullRequests: &setv1.PullRequestGenerator{
				GitHub: &setv1.PullRequestGitHub{Owner: "acme", Repo: "shop"},
			}}},
			Template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pr-{{ .number }}\n",
		},
	}
	g.Expect(k8s.Create(context.Background(), set)).To(Succeed())
	rcv := createReceiver(t, ns, "prs", notificationv1.GitHubReceiver, func(s *notificationv1.ReceiverSpec) {
		s.Events = []string{"pull_request"}
		s.Resources = []notificationv1.CrossNamespaceObjectReference{{Kind: setv1.ObjectSetKind, Name: "*"}}
	})
	event := []byte(`{"action":"closed","number":7,"pull_request":{"number":7,"state":"closed"},"repository":{"full_name":"acme/shop"}}`)
	code, msg := post(t, rcv.Status.WebhookPath, map[string]string{
		"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": sign(sha256.New, "sha256", event),
	}, event)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(msg).To(ContainSubstring("ObjectSet/previews"))
	g.Expect(requestedAt(t, set)).NotTo(BeEmpty())
}
