package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// When the wait's context ends while an object is being read, the wait
// has timed out, and says so with where each object stood, as it does when
// the context ends between two rounds: on a loaded machine the deadline
// falls in a GET as often as between them, and the news must not depend on
// which.
func TestAReadCutShortByTheDeadlineIsATimeout(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	reads, cut := 0, false
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			reads++
			if reads != 2 {
				// The first round's read, and the look for Pods after
				// the timeout (explainByPods) find nothing.
				return apierrors.NewNotFound(deployments, key.Name)
			}
			// The second round's read is where the deadline falls: the
			// context ends during the request, and client-go's error
			// wraps the context's.
			cut = true
			cancel()
			return fmt.Errorf("Get \"https://127.0.0.1/apis/apps/v1/namespaces/%s/deployments/%s\": %w", key.Namespace, key.Name, ctx.Err())
		},
	})
	w := &Watcher{cache: &informertest.FakeInformers{}, changes: newBroadcaster()}
	e := New(c, nil, w, 1)
	defer func(d time.Duration) { HealthPollFallback = d }(HealthPollFallback)
	HealthPollFallback = time.Millisecond // the second round comes from the fallback poll

	web := &unstructured.Unstructured{}
	web.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	web.SetNamespace("apps")
	web.SetName("web")
	pending, err := e.WaitHealthy(ctx, []*unstructured.Unstructured{web}, nil, nil)
	g.Expect(cut).To(BeTrue(), "the deadline fell in the second read")
	var timeout *HealthTimeoutError
	g.Expect(errors.As(err, &timeout)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError("timed out waiting for health: Deployment/apps/web is Missing: not found"))
	g.Expect(pending).To(HaveLen(1))
}
