package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/options"
	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/server"
)

// uiViewerRBAC lets a ServiceAccount read Plumb's objects and the app's
// objects in the story's two namespaces, suspend, resume and reconcile
// (patch) the Kustomization, and patch its Deployment (for the diff's
// dry-run): what a team member of that app may do.
const uiViewerRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
  - apiGroups: [source.plumb.dev, kustomize.plumb.dev, helm.plumb.dev]
    resources: ["*"]
    verbs: [get, list, watch, patch]
  - apiGroups: ["", apps, batch]
    resources: ["*"]
    verbs: [get, list, watch]
  # The diff is a server-side dry-run apply, which the API server allows
  # only to those who may patch the object.
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [patch]
`

// TestTheUIShowsTheSampleAppItsDriftAndItsActions is issue 16's browser
// story against the real suite: the UI server in this process (token
// mode), its pages in Debian's chromium.
func TestTheUIShowsTheSampleAppItsDriftAndItsActions(t *testing.T) {
	s := deploy(t, "e2e-ui")
	ns, appNS := s.demo.Namespace, s.demo.AppNamespace
	viewer := serviceAccountWithRBAC(t, s, "ui-viewer", []string{ns, appNS})
	outsider := serviceAccountWithRBAC(t, s, "ui-outsider", nil)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ui, err := server.New(ctx, server.Options{
		Auth:            server.AuthToken,
		Config:          env.Config, // the UI's own identity: watches and the stream
		NATS:            options.NATS{URL: env.NATSURL},
		InsecureCookies: true, // httptest serves plain HTTP
		// localenv's render-controller is a process on this machine, not
		// a Service behind the API server's proxy.
		LocalRenderController: env.Controllers[localenv.RenderController].StorageAddr,
	})
	s.g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)

	b := browsertest.Start(t)
	signIn(b, srv.URL, viewer)
	q := url.Values{"namespace": {ns}}.Encode()

	// The overview lists the sample app as Ready.
	b.Go(srv.URL+"/#/?"+q, ".overview-list .vrow:not(.loading)")
	b.Eventually("the sample's Kustomization is listed Ready", fmt.Sprintf(
		`[...document.querySelectorAll('.overview-list .vrow')].some((r) => r.querySelector('.name')?.textContent === %q && r.querySelector('.badge')?.textContent === 'Ready')`,
		ns+"/demo"))
	b.Screenshot("e2e-overview")

	// A foreign edit appears on the drift timeline with its field path,
	// then as corrected. The issue asks for "within one second": the
	// deadline here is generous (a loaded machine), the time is logged.
	b.Go(srv.URL+"/#/drift?"+url.Values{"namespace": {ns}, "name": {"demo"}}.Encode(), "#f-name")
	edited := time.Now()
	foreignEdit(t, s, appNS, 5)
	b.Eventually("the foreign edit shows as drift with spec.replicas",
		`[...document.querySelectorAll('.stream .entry.detected')].some((e) => e.textContent.includes('spec.replicas') && e.textContent.includes('e2e-foreign'))`)
	t.Logf("drift shown %s after the edit", time.Since(edited).Round(time.Millisecond))
	b.Eventually("the drift shows as corrected",
		`[...document.querySelectorAll('.stream .entry.corrected')].some((e) => e.textContent.includes('spec.replicas') && e.textContent.includes('reverted in'))`)
	t.Logf("correction shown %s after the edit", time.Since(edited).Round(time.Millisecond))
	b.Screenshot("e2e-drift")

	// Suspend from the page: spec.suspend is set with the user's identity.
	objectPage := srv.URL + "/#/k/kustomization/" + ns + "/demo"
	b.Go(objectPage, "#act-suspend")
	b.Click("#act-suspend")
	b.Eventually("the page says suspended", `document.querySelector('#action-result').textContent === 'Suspended'`)
	s.g.Eventually(func() bool { return s.kustomization().Spec.Suspend }).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())

	// Suspended, a foreign edit stays: the applied object's diff shows
	// spec.replicas live → Git, and who changed it.
	foreignEdit(t, s, appNS, 4)
	b.Go(srv.URL+"/#/k/kustomization/"+ns+"/demo/o/"+url.PathEscape("apps/Deployment/"+appNS+"/hello"), "#s-diff")
	b.Eventually("the diff shows spec.replicas 4 → 2 changed by e2e-foreign",
		`[...document.querySelectorAll('.diff-line')].some((l) => l.textContent.includes('spec.replicas') && l.querySelector('.val.before')?.textContent === '4' && l.querySelector('.val.after')?.textContent === '2' && l.textContent.includes('changed by e2e-foreign'))`)
	b.Screenshot("e2e-applied")

	// Resume and reconcile (with source) from the page: Git wins again.
	before := s.kustomization().Status.LastHandledReconcileAt
	b.Go(objectPage, "#act-resume")
	// The page has read the object when it hides Suspend for a suspended
	// one: only then is the Resume button the one of this page's object.
	b.Eventually("the page shows the object suspended", `document.querySelector('#act-suspend')?.hidden === true`)
	b.Click("#act-resume")
	b.Eventually("the resume has an answer", `!['', 'Resume…'].includes(document.querySelector('#action-result').textContent)`)
	s.g.Expect(b.Text("#action-result")).To(Equal("Resumed"))
	b.Click("#act-reconcile")
	b.Eventually("the page says reconcile requested", `document.querySelector('#action-result').textContent === 'Reconcile requested'`)
	s.g.Eventually(func(g Gomega) {
		k := s.kustomization()
		g.Expect(k.Spec.Suspend).To(BeFalse())
		g.Expect(k.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))
		g.Expect(k.Status.LastHandledReconcileAt).NotTo(Equal(before))
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: appNS, Name: "hello"}, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	b.Screenshot("e2e-object")

	// A user whose token may not list the namespace does not see it —
	// and the page loaded without an error, so "not seen" is not "failed".
	b2 := browsertest.Start(t)
	signIn(b2, srv.URL, outsider)
	b2.Go(srv.URL+"/#/", ".summary")
	b2.Eventually("the overview answered", `document.querySelector('.summary').textContent !== ''`)
	if n := b2.Count(".problem .error"); n != 0 {
		t.Fatalf("the outsider's overview failed: %s", b2.Text(".problem"))
	}
	if names := browsertest.Eval[string](b2, `[...document.querySelectorAll('.overview-list .vrow .name')].map((e) => e.textContent).join(' ')`); strings.Contains(names, ns+"/") {
		t.Errorf("the outsider sees %s's objects: %s", ns, names)
	}
	if opts := browsertest.Eval[string](b2, `[...document.querySelectorAll('#f-namespace option')].map((o) => o.value).join(' ')`); strings.Contains(" "+opts+" ", " "+ns+" ") {
		t.Errorf("the outsider's namespace filter offers %s: %s", ns, opts)
	}
}

// signIn signs b in with a bearer token on the sign-in page.
func signIn(b *browsertest.Browser, base, token string) {
	b.Go(base+"/", "#token")
	// The token is long: set it rather than type thousands of key presses.
	browsertest.Eval[bool](b, fmt.Sprintf(`(document.querySelector('#token').value = %q, true)`, token))
	b.Click(".signin button[type=submit]")
	b.WaitVisible("#signout")
}

// foreignEdit sets the sample Deployment's replicas as another field manager would (kubectl edit).
func foreignEdit(t *testing.T, s *story, appNS string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	s.g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: appNS, Name: "hello"}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	s.g.Expect(env.Client.Patch(s.ctx, d, patch, client.FieldOwner("e2e-foreign"))).To(Succeed())
}

// serviceAccountWithRBAC makes a ServiceAccount in the story's namespace
// with uiViewerRBAC bound in each of namespaces (none: no rights at all),
// and returns a token for it (TokenRequest).
func serviceAccountWithRBAC(t *testing.T, s *story, name string, namespaces []string) string {
	t.Helper()
	ns := s.demo.Namespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.g.Expect(env.Client.Create(s.ctx, sa)).To(Succeed())
	role := ns + "-" + name
	_, err := env.ApplyYAML(s.ctx, []byte(fmt.Sprintf(uiViewerRBAC, role)))
	s.g.Expect(err).NotTo(HaveOccurred())
	for _, target := range namespaces {
		s.g.Expect(env.Client.Create(s.ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		})).To(Succeed())
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	s.g.Expect(env.Client.SubResource("token").Create(s.ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}
