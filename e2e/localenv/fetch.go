package localenv

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// FetchFrom asks a Pod of the echo program (testdata/echo) to request
// target itself, through its /fetch on port 8080, from this process,
// which reaches every Pod on the bridge (policies let a Pod's own node
// through): the Pod's status (502 when its own request got no answer) and
// body, or why the Pod did not answer. A NetworkPolicy judges the Pod a
// connection comes from, so this is how a story asks one Pod to reach
// another.
func FetchFrom(ctx context.Context, from *corev1.Pod, target string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := "http://" + net.JoinHostPort(from.Status.PodIP, "8080") + "/fetch?url=" + url.QueryEscape(target)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), err
}
