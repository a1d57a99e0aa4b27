package localenv

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kubelet runs as the node, not as an admin: its kubeconfig's
// certificate says system:node:plumb-node in system:nodes; with it the
// kubelet registered the Node and runs a Pod that mounts a Secret, and the
// same credentials read that Secret but are refused one no Pod of the node
// uses, the list of all Secrets, and another Node (the Node authorizer and
// NodeRestriction).
func TestARealNodesKubeletHasTheNodesIdentity(t *testing.T) {
	ctx, g, env, ns := onSharedNode(t, "identity", 10*time.Minute)

	cfg, err := clientcmd.BuildConfigFromFlags("", env.Node.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	asNode, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(asNode.Create(ctx, review)).To(Succeed())
	g.Expect(review.Status.UserInfo.Username).To(Equal(NodeUser))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement(NodeGroup))
	g.Expect(review.Status.UserInfo.Groups).NotTo(ContainElement("system:masters"))

	mounted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mounted"}, StringData: map[string]string{"token": "used by a Pod of the node"}}
	unused := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unused"}, StringData: map[string]string{"token": "used by no Pod"}}
	g.Expect(env.Client.Create(ctx, mounted)).To(Succeed())
	g.Expect(env.Client.Create(ctx, unused)).To(Succeed())
	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/echo", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "with-secret"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "echo", Image: image, SecurityContext: asPlumbRuns(),
				VolumeMounts: []corev1.VolumeMount{{Name: "secret", MountPath: "/secret", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mounted"}}}},
		},
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	// Running: the kubelet, as the node, read the Secret for the volume.
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Spec.NodeName).To(Equal(NodeName))
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		return podReport(ctx, env, ns) + "\n" + Tail(env.Node.Kubelet.LogPath, 20)
	})

	// The Node authorizer learns of the Pod's Secret from its informer,
	// a moment after the Pod is bound.
	g.Eventually(func() error {
		return asNode.Get(ctx, client.ObjectKeyFromObject(mounted), &corev1.Secret{})
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	err = asNode.Get(ctx, client.ObjectKeyFromObject(unused), &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading a Secret no Pod of the node uses: %v", err)
	err = asNode.List(ctx, &corev1.SecretList{}, client.InNamespace(ns))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing Secrets: %v", err)
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "another-node"}}
	err = asNode.Create(ctx, other)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating another Node: %v", err)
	t.Logf("as %s: %v", NodeUser, err)

	// The kubelet's own API: the API server reaches it with its kubelet
	// client certificate, which the kubelet trusts and RBAC authorizes
	// (kubeletauth.go), so the container's log comes through.
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		raw, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(raw)).To(ContainSubstring("serving on :8080"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	// Nobody else: an anonymous request is not authenticated (401), and
	// the node's own certificate is authenticated but not authorized
	// (403): the kubelet asks the API server, it does not allow all.
	kubeletPods := "https://" + net.JoinHostPort(nodeIP, "10250") + "/pods"
	g.Expect(kubeletStatus(kubeletPods, nil)).To(Equal(http.StatusUnauthorized), "anonymous")
	nodeTLS, err := rest.TLSConfigFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kubeletStatus(kubeletPods, nodeTLS.GetClientCertificate)).To(Equal(http.StatusForbidden), "as the node")
}

// kubeletStatus is the HTTP status of a GET of the kubelet's API at url
// with the given client certificate, if any. The kubelet's serving
// certificate is its own self-signed one, not checked: what is tested is
// how the kubelet treats its client.
func kubeletStatus(url string, cert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)) (int, error) {
	c := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify:   true, //nolint:gosec // see above
			GetClientCertificate: cert,
		}},
	}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
