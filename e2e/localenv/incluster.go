package localenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// advertiseOnBridge makes the Git server's clone URLs name the bridge's
// address, forwarded to it (bridgeproxy.go): with Options.NoControllers
// and a real node, source-controller is a Pod, which cannot reach the
// launcher's 127.0.0.1, and the launcher itself reaches the bridge's
// address as well.
func (e *Env) advertiseOnBridge() error {
	at, err := e.Node.expose(e.Git.ln.Addr().String())
	if err != nil {
		return err
	}
	e.Git.advertised = at
	return nil
}

// webhookReceiverService is deploy/notification-controller's Service of
// the webhook receiver, port 80.
const webhookReceiverService = "webhook-receiver"

// receiverURL is where the Git server posts a push webhook of the
// Receiver at webhookPath: the launcher's notification-controller, or,
// when Plumb runs as Pods (Options.NoControllers), its Service's cluster
// IP, which the launcher reaches through kube-proxy's rules.
func (e *Env) receiverURL(ctx context.Context, webhookPath string) (string, error) {
	if c := e.Controllers[NotificationController]; c != nil {
		return e.ReceiverURL(webhookPath), nil
	}
	svc := &corev1.Service{}
	key := types.NamespacedName{Namespace: InstallNamespace, Name: webhookReceiverService}
	if err := e.Client.Get(ctx, key, svc); err != nil {
		return "", fmt.Errorf("no notification-controller in the launcher, and its Service %s: %w", key, err)
	}
	return "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + webhookPath, nil
}

// InstallNamespace is where `plumb install` puts Plumb.
const InstallNamespace = "plumb-system"

// ServiceHTTPClient is an HTTP client for a Service's cluster IP, which
// this machine reaches through kube-proxy's rules. It opens a connection
// per request: a connection opened before kube-proxy wrote the Service's
// rules is not DNATed, and where the machine's outgoing port 80 goes to a
// proxy (these machines' does), the proxy answers it, 404 for any path.
// Kept alive, that connection would stay pinned to the proxy after the
// rules are in, and every later request would read the proxy's 404.
func ServiceHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}
