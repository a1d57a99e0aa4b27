package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// A scan finds the pushed tags, drops cosign's signature tags by default
// and the spec's exclusions when set, and records a summary.
func TestImageRepositoryScansTagsAndExcludes(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image := reg.Host() + "/app"
	push(t, image, nil, "1.0.0", "1.1.0", "2.0.0", "sha256-abc.sig", "dev-1")
	ns := namespace(t)

	repo := newRepository(ns, "app", image)
	g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	repo = waitReady(t, repo, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(repo.Status.CanonicalImageName).To(Equal(image))
	g.Expect(repo.Status.LastScanResult.TagCount).To(Equal(4))
	g.Expect(repo.Status.LastScanResult.LatestTags).To(Equal([]string{"dev-1", "2.0.0", "1.1.0", "1.0.0"}))
	g.Expect(repo.Status.ObservedExclusionList).To(Equal(imagev1.DefaultExclusionList))
	g.Expect(readyOf(repo.Status.Conditions).Message).To(ContainSubstring("found 4 tags"))

	repo.Spec.ExclusionList = []string{`^dev-`, `\.sig$`}
	g.Expect(k8s.Update(context.Background(), repo)).To(Succeed())
	repo = waitReady(t, repo, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(repo.Status.LastScanResult.LatestTags).To(Equal([]string{"2.0.0", "1.1.0", "1.0.0"}))
	g.Expect(repo.Status.ObservedExclusionList).To(Equal([]string{`^dev-`, `\.sig$`}))

	bad := newRepository(ns, "bad-exclusion", image)
	bad.Spec.ExclusionList = []string{"("}
	g.Expect(k8s.Create(context.Background(), bad)).To(Succeed())
	bad = waitReady(t, bad, metav1.ConditionFalse, meta.InvalidSpecReason)
	g.Expect(readyOf(bad.Status.Conditions).Message).To(ContainSubstring("spec.exclusionList[0]"))

	tagged := newRepository(ns, "tagged", image+":v1")
	g.Expect(k8s.Create(context.Background(), tagged)).To(Succeed())
	waitReady(t, tagged, metav1.ConditionFalse, imagev1.ImageURLInvalidReason)
}

// A registry behind basic auth: anonymous scans are refused
// (AuthenticationFailed), a missing Secret is named, and a
// docker-registry Secret's credentials are used.
func TestImageRepositoryCredentialsFromADockerConfigSecret(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{Username: "robot", Password: "s3cret"})
	image := reg.Host() + "/private"
	push(t, image, &authn.Basic{Username: "robot", Password: "s3cret"}, "v1", "v2")
	ns := namespace(t)

	anonymous := newRepository(ns, "anonymous", image)
	g.Expect(k8s.Create(context.Background(), anonymous)).To(Succeed())
	waitReady(t, anonymous, metav1.ConditionFalse, sourcev1.AuthenticationFailedReason)

	missing := newRepository(ns, "missing", image)
	missing.Spec.SecretRef = &meta.LocalObjectReference{Name: "absent"}
	g.Expect(k8s.Create(context.Background(), missing)).To(Succeed())
	missing = waitReady(t, missing, metav1.ConditionFalse, sourcev1.AuthenticationFailedReason)
	g.Expect(readyOf(missing.Status.Conditions).Message).To(ContainSubstring("Secret " + ns + "/absent not found"))

	g.Expect(k8s.Create(context.Background(), dockerConfigSecret(ns, "registry", reg.Host(), "robot", "s3cret"))).To(Succeed())
	// Credentials go over plain HTTP only with spec.insecure.
	plain := newRepository(ns, "plain", image)
	plain.Spec.SecretRef = &meta.LocalObjectReference{Name: "registry"}
	g.Expect(k8s.Create(context.Background(), plain)).To(Succeed())
	plain = waitReady(t, plain, metav1.ConditionFalse, meta.InvalidSpecReason)
	g.Expect(readyOf(plain.Status.Conditions).Message).To(ContainSubstring("unless spec.insecure is true"))

	private := newRepository(ns, "private", image)
	private.Spec.SecretRef = &meta.LocalObjectReference{Name: "registry"}
	private.Spec.Insecure = true
	g.Expect(k8s.Create(context.Background(), private)).To(Succeed())
	private = waitReady(t, private, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(private.Status.LastScanResult.LatestTags).To(Equal([]string{"v2", "v1"}))
	g.Expect(readyOf(private.Status.Conditions).Message).NotTo(ContainSubstring("s3cret"))
}

// hostileRegistry answers the distribution API's ping, and the tag list of
// repository "app" with tags.
func hostileRegistry(t *testing.T, tags http.HandlerFunc) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/":
			w.WriteHeader(http.StatusOK)
		case "/v2/app/tags/list":
			tags(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/app"
}

// tagPage writes a page of n tags named after the page, and a link to the
// next page, for ever.
func tagPage(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page := r.URL.Query().Get("last")
		var tags []string
		for i := range n {
			tags = append(tags, fmt.Sprintf(`"p%s-%d"`, page, i))
		}
		w.Header().Set("Link", fmt.Sprintf(`</v2/app/tags/list?n=1000&last=%s0>; rel="next"`, page))
		fmt.Fprintf(w, `{"name":"app","tags":[%s]}`, strings.Join(tags, ","))
	}
}

// A registry that lists more tags than --max-tags, or pages without end,
// or answers with a body over --max-response-size, or too slowly for
// spec.timeout, or redirects to a metadata address, fails the scan with
// a status that says which, and leaves no tags to the policies.
func TestImageRepositoryBoundsAHostileRegistry(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name, reason, message string
		tags                  http.HandlerFunc
		timeout               time.Duration
	}{
		{"too-many-tags", imagev1.TagLimitExceededReason, fmt.Sprintf("more than %d tags", testLimits.MaxTags), tagPage(20), 0},
		{"endless-pages", imagev1.TagLimitExceededReason, fmt.Sprintf("more than %d pages", testLimits.MaxPages), tagPage(1), 0},
		{"huge-page", imagev1.ReadOperationFailedReason, fmt.Sprintf("more than the limit of %d bytes", testLimits.MaxPageBytes), func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"name":"app","tags":["%s"]}`, strings.Repeat("a", int(testLimits.MaxPageBytes)))
		}, 0},
		{"slow", imagev1.ReadOperationFailedReason, "spec.timeout 1s", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, time.Second},
		// go-containerregistry refuses this redirect itself; the address
		// policy would at dial time (registry_test.go).
		{"redirect-to-metadata", imagev1.ReadOperationFailedReason, `to private/link-local host "169.254.169.254" denied`, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusTemporaryRedirect)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := newRepository(ns, tc.name, hostileRegistry(t, tc.tags))
			if tc.timeout > 0 {
				repo.Spec.Timeout = &metav1.Duration{Duration: tc.timeout}
			}
			g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
			repo = waitReady(t, repo, metav1.ConditionFalse, tc.reason)
			g.Expect(readyOf(repo.Status.Conditions).Message).To(ContainSubstring(tc.message))
			g.Expect(repo.Status.LastScanResult).To(BeNil())
		})
	}
}
