package setview_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/server"
	"plumb.dev/ui/server/viewtest"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

// startUI runs the UI server in token mode until the test ends.
func startUI(t *testing.T, stream string) string {
	t.Helper()
	_, base := viewtest.Start(t, server.Options{Auth: server.AuthToken, InsecureCookies: true, Config: env.Config,
		NATS: options.NATS{URL: env.NATSURL, Stream: stream}})
	return base
}

var hour = metav1.Duration{Duration: time.Hour}

// An ObjectSet's page shows its generators and each element with the
// objects it gave, their Ready state, and a link to each one's page.
func TestTheBrowserShowsAnObjectSetsElementsAndTheirObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "set")
	g.Expect(err).NotTo(HaveOccurred())
	set := &setv1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: setv1.ObjectSetSpec{Interval: hour, Template: "{}",
			Generators: []setv1.Generator{{List: &setv1.ListGenerator{Elements: []apiextensionsv1.JSON{
				{Raw: []byte(`{"env":"dev"}`)}, {Raw: []byte(`{"env":"prod"}`)}}}}}}}
	labels := map[string]string{setv1.NameLabel: "fleet", setv1.NamespaceLabel: ns}
	dev := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-dev", Labels: labels},
		Spec: kustomizev1.KustomizationSpec{Interval: hour, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet"}}}
	prod := dev.DeepCopy()
	prod.Name = "app-prod"
	for _, o := range []client.Object{set, dev, prod} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	now := metav1.Now()
	testenv.SetStatus(ctx, t, env.Client, dev, func(k *kustomizev1.Kustomization) {
		k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "applied", LastTransitionTime: now}}
	})
	testenv.SetStatus(ctx, t, env.Client, prod, func(k *kustomizev1.Kustomization) {
		k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "BuildFailed", Message: "no such path", LastTransitionTime: now}}
	})
	testenv.SetStatus(ctx, t, env.Client, set, func(s *setv1.ObjectSet) {
		s.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
			Message: "applied 2 objects for 2 elements", LastTransitionTime: now}}
		s.Status.Elements = 2
		s.Status.ElementDetails = []setv1.ElementStatus{
			{Values: `{"env":"dev"}`, Objects: []string{"Kustomization/" + ns + "/app-dev"}},
			{Values: `{"env":"prod"}`, Objects: []string{"Kustomization/" + ns + "/app-prod"}}}
	})
	viewer := viewtest.Token(t, env.Client, ns, "viewer", []rbacv1.PolicyRule{
		{APIGroups: []string{setv1.GroupVersion.Group}, Resources: []string{"objectsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list"}},
	})

	base := startUI(t, "PLUMB_UI_SET")
	b := browsertest.Start(t)
	viewtest.SignIn(b, base, viewer)
	b.Go(base+"/#/?kind=ObjectSet&namespace="+ns, ".overview-list .vrow:not(.loading)")
	b.Eventually("the overview lists the set", `document.querySelector('.overview-list').textContent.includes('fleet')`)
	b.Go(base+"/#/k/objectset/"+ns+"/fleet", "#set-elements")
	b.Eventually("the generator is summed up", `document.querySelector('#set-generators').textContent === 'list of 2 elements'`)
	b.Eventually("both elements with their objects and states", `(() => {
		const rows = [...document.querySelectorAll('#set-elements tr.set-element')];
		return rows.length === 2 && rows[0].querySelector('.element-values').textContent === '{"env":"dev"}'
			&& rows[0].textContent.includes('Kustomization `+ns+`/app-dev') && rows[0].querySelector('.badge').textContent === 'Ready'
			&& rows[1].textContent.includes('app-prod') && rows[1].querySelector('.badge').textContent === 'NotReady'
			&& rows[1].textContent.includes('BuildFailed'); })()`)
	b.Eventually("the set's conditions", `document.querySelector('main').textContent.includes('applied 2 objects for 2 elements')`)
	b.Screenshot("objectset")
	b.Click(`#set-elements a[href="#/k/kustomization/` + ns + `/app-prod"]`)
	b.Eventually("the link opens the element's Kustomization", `location.hash === '#/k/kustomization/`+ns+`/app-prod' && document.querySelector('h1').textContent === 'app-prod'`)
}

// The picker on a Manual Kustomization: the operator ticks one of the
// objects out of sync, sees what will be synced, and presses Sync
// selected; the Kustomization then names exactly that object in
// plumb.dev/sync-only, and once the controller handled it the page says
// so. A viewer's Sync selected is refused and annotates nothing.
func TestTheBrowserSyncsOnlyTheTickedObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "pick")
	g.Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{Interval: hour, SyncPolicy: kustomizev1.SyncPolicyManual,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	a, c := "ConfigMap/"+ns+"/a", "ConfigMap/"+ns+"/c"
	outOfSync := func(k *kustomizev1.Kustomization, create, change []string) {
		k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
			Message: "revision main@sha1:2 waits for a manual sync", LastTransitionTime: metav1.Now()}}
		k.Status.OutOfSync = &kustomizev1.OutOfSyncStatus{Revision: "main@sha1:2", Create: create, Creates: len(create), Change: change, Changes: len(change)}
	}
	testenv.SetStatus(ctx, t, env.Client, ks, func(k *kustomizev1.Kustomization) { outOfSync(k, []string{c}, []string{a}) })
	read := []rbacv1.PolicyRule{{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}}}
	viewer := viewtest.Token(t, env.Client, ns, "viewer", read)
	ops := viewtest.Token(t, env.Client, ns, "ops", append(read, rbacv1.PolicyRule{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"patch"}}))

	base := startUI(t, "PLUMB_UI_PICK")
	b := browsertest.Start(t)
	app := base + "/#/k/kustomization/" + ns + "/app"

	// The viewer may tick but not sync.
	viewtest.SignIn(b, base, viewer)
	b.Go(app, "#act-sync-selected")
	b.Eventually("both objects are offered", `document.querySelectorAll('#out-of-sync input.sync-pick').length === 2`)
	b.Click(`#out-of-sync input.sync-pick[value="` + a + `"]`)
	b.Click("#act-sync-selected")
	b.Eventually("the sync is refused", `document.querySelector('#sync-selected-result').textContent === 'Sync: not allowed'`)
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.SyncRequestAnnotation))
	g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.SyncOnlyAnnotation))

	b.Click("#signout")
	b.WaitVisible("#token")
	viewtest.SignIn(b, base, ops)
	b.Go(app, "#act-sync-selected")
	b.Eventually("nothing is ticked yet", `document.querySelector('#act-sync-selected').disabled && document.querySelectorAll('#out-of-sync input.sync-pick').length === 2`)
	b.Click(`#out-of-sync input.sync-pick[value="` + a + `"]`)
	b.Eventually("the page says what will be synced", `document.querySelector('#sync-preview').textContent === 'Will sync only: `+a+`.'`)
	b.Screenshot("selective-sync")
	b.Click("#act-sync-selected")
	b.Eventually("the request is sent", `document.querySelector('#sync-selected-result').textContent === 'Sync of `+a+` requested'`)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.SyncOnlyAnnotation, a), "exactly the ticked object")
	g.Expect(got.Annotations[kustomizev1.SyncRequestAnnotation]).NotTo(BeEmpty())
	requested := got.Annotations[meta.ReconcileRequestAnnotation]
	g.Expect(requested).NotTo(BeEmpty())

	// sync-controller's part, as it writes it: the request handled, the
	// synced object no longer out of sync.
	testenv.SetStatus(ctx, t, env.Client, ks, func(k *kustomizev1.Kustomization) {
		outOfSync(k, []string{c}, nil)
		k.Status.LastHandledReconcileAt = requested
	})
	b.Eventually("the page says it is done", `document.querySelector('#sync-selected-result').textContent === 'Synced `+a+`'`)
	b.Eventually("and only the other object is left to tick", `[...document.querySelectorAll('#out-of-sync input.sync-pick')].map((x) => x.value).join() === '`+c+`'`)
}
