package access

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/testenv"
)

var env = testenv.Lazy{Options: []testenv.Option{testenv.WithoutNATS()}}

func TestMain(m *testing.M) {
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func TestPastTheBoundOfAllSessionsAReviewIsAnsweredButNotKept(t *testing.T) {
	g := NewWithT(t)
	cfg := env.Get(t).Config
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := NewSession(cfg, app.NewScheme(), mapper, ModeKubeconfig, "admin", nil)
	g.Expect(err).NotTo(HaveOccurred())
	cachedReviews.Store(0)
	defer cachedReviews.Store(0)

	g.Expect(s.MayDo(t.Context(), "get", "", "pods", "default", "")).To(BeTrue(), "the admin may")
	g.Expect(s.reviews).To(HaveLen(1))
	g.Expect(cachedReviews.Load()).To(BeEquivalentTo(1))

	cachedReviews.Store(MaxCachedReviews) // the other sessions took the room
	g.Expect(s.MayDo(t.Context(), "get", "", "configmaps", "default", "")).To(BeTrue(), "still answered")
	g.Expect(s.reviews).To(HaveLen(1), "not kept")
	g.Expect(s.MayDo(t.Context(), "get", "", "pods", "default", "")).To(BeTrue())
	g.Expect(s.reviews).To(HaveLen(1), "a kept answer is still used")

	cachedReviews.Store(1)
	s.release() // the session ended; a request in flight goes on
	g.Expect(cachedReviews.Load()).To(BeZero())
	g.Expect(s.MayDo(t.Context(), "get", "", "secrets", "default", "")).To(BeTrue())
	g.Expect(s.reviews).To(BeEmpty(), "an ended session keeps nothing")
	g.Expect(cachedReviews.Load()).To(BeZero())
}
