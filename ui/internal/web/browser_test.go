package web

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"plumb.dev/ui/browsertest"
)

// These tests run the front end in Debian's chromium against fakeAPI: they
// are about what the pages do with the contract's JSON (rendering, filters,
// paging, the virtual list, the keyboard, actions, live updates, hostile
// data), not about the server. PLUMB_UI_SCREENSHOTS=../../../docs/ui saves
// the screenshots docs/ui.md shows.

// signedIn starts the fake API and a browser signed in with kubeconfig
// mode's login link, on the overview.
func signedIn(t *testing.T) (*browsertest.Browser, *fakeAPI, string) {
	t.Helper()
	api := newFakeAPI()
	srv := api.start(t)
	b := browsertest.Start(t)
	b.Go(srv.URL+"/#/?login="+fakeSecret, ".overview-list .vrow:not(.loading)")
	return b, api, srv.URL
}

func TestSignInWithATokenShowsTheOverview(t *testing.T) {
	api := newFakeAPI()
	srv := api.start(t)
	b := browsertest.Start(t)
	b.Go(srv.URL+"/", "#token")
	b.Screenshot("signin")
	b.Type("#token", "not-a-token\r")
	b.Eventually("the page says the token was refused", `document.querySelector('.form-status').textContent.includes('did not accept')`)
	browsertest.Eval[bool](b, `(document.querySelector('#token').value = '', true)`)
	b.Type("#token", fakeToken+"\r")
	b.WaitVisible(".overview-list .vrow:not(.loading)")
	if got := b.Text("#user"); got != fakeUser {
		t.Errorf("the header shows user %q, want %q", got, fakeUser)
	}
	if n := b.Count("#token"); n != 0 {
		t.Errorf("the token field is still in the page after signing in")
	}
	// Sign out is a POST with the CSRF header (fakeAPI refuses it without),
	// and the page is the sign-in page again.
	b.Click("#signout")
	b.WaitVisible("#token")
	if q := api.queriesOf("/api/logout"); len(q) != 1 {
		t.Errorf("%d accepted sign-out requests, want 1", len(q))
	}
	if browsertest.Eval[bool](b, `document.querySelectorAll('.overview-list').length > 0`) {
		t.Errorf("the overview is still in the page after signing out")
	}
}

func TestTheLoginLinkSignsInAndLeavesNoSecretInTheAddress(t *testing.T) {
	b, _, _ := signedIn(t)
	if href := browsertest.Eval[string](b, `location.href`); strings.Contains(href, fakeSecret) {
		t.Errorf("the address still holds the login secret: %s", href)
	}
}

func TestTheOverviewKeepsTheDOMSmallWith1000Rows(t *testing.T) {
	b, api, _ := signedIn(t)
	b.Eventually("the summary counts every object", `document.querySelector('.summary').textContent.startsWith('1006 objects')`)
	// Measured, not asserted: the "first screen in under 1 second".
	t.Logf("first screen of 1,006 rows %.0f ms after navigation started", browsertest.Eval[float64](b, `performance.now()`))
	b.Screenshot("overview")
	if n := b.Count(".overview-list .vrow"); n > 80 {
		t.Errorf("%d rows in the DOM for 1,006 objects; the list must draw only the rows in view", n)
	}
	// Scrolling to the end fetches the last page and draws its rows.
	browsertest.Eval[bool](b, `(() => { const l = document.querySelector('.overview-list'); l.scrollTop = l.scrollHeight; return true; })()`)
	b.Eventually("the last row is drawn", `[...document.querySelectorAll('.overview-list .vrow .name')].some((e) => e.textContent.includes('app-0999'))`)
	if n := b.Count(".overview-list .vrow"); n > 80 {
		t.Errorf("%d rows in the DOM after scrolling to the end", n)
	}
	var offsets []string
	for _, q := range api.queriesOf("/api/overview") {
		offsets = append(offsets, q.Get("offset"))
		if n, err := strconv.Atoi(q.Get("limit")); err != nil || n < 1 || n > 500 {
			t.Errorf("overview asked for limit %q; the contract caps it at 500", q.Get("limit"))
		}
	}
	if !contains(offsets, "1000") {
		t.Errorf("the overview fetched offsets %v; scrolling to the end must fetch the last page (offset 1000)", offsets)
	}
	if contains(offsets, "400") {
		t.Errorf("the overview fetched offsets %v; pages that were never in view must not be fetched", offsets)
	}
}

func TestOverviewFiltersAndCountsComeFromTheServer(t *testing.T) {
	b, api, _ := signedIn(t)
	b.Eventually("the counts arrive", `document.querySelector('.count[data-status=NotReady] .count-n').textContent !== '0'`)
	want := b.Text(".count[data-status=NotReady] .count-n")
	b.Click(".count[data-status=NotReady]")
	b.Eventually("only NotReady rows are listed", `document.querySelector('.summary').textContent.startsWith('`+want+` objects match')`)
	words := browsertest.Eval[[]string](b, `[...document.querySelectorAll('.overview-list .vrow > span:first-child .badge')].map((e) => e.textContent)`)
	for _, w := range words {
		if w != "NotReady" {
			t.Errorf("with status NotReady the list shows a row that is %q", w)
		}
	}
	if !strings.Contains(browsertest.Eval[string](b, `location.hash`), "status=NotReady") {
		t.Errorf("the filter is not in the address, so it cannot be bookmarked")
	}
	b.SetValue("#f-status", "")
	b.SetValue("#f-namespace", "team-3")
	b.Type("#f-q", "app-00")
	b.Eventually("the namespace and text filters reach the server", `document.querySelector('.summary').textContent.startsWith('10 objects match')`)
	last := api.queriesOf("/api/overview")
	q := last[len(last)-1]
	if q.Get("namespace") != "team-3" || q.Get("q") != "app-00" || q.Get("status") != "" {
		t.Errorf("the last overview query was %v, want namespace=team-3 q=app-00 and no status", q)
	}
	names := browsertest.Eval[[]string](b, `[...document.querySelectorAll('.overview-list .vrow .name')].map((e) => e.textContent)`)
	for _, n := range names {
		if !strings.HasPrefix(n, "team-3/app-00") {
			t.Errorf("the filtered list shows %q", n)
		}
	}
}

func TestAHostileNameIsShownAsText(t *testing.T) {
	b, _, _ := signedIn(t)
	b.SetValue("#f-namespace", "zz-evil")
	b.Eventually("the row of the hostile name is drawn", `[...document.querySelectorAll('.overview-list .vrow .name')].some((e) => e.textContent.includes('zz-evil/'))`)
	name := b.Text(".overview-list .vrow .name")
	if name != "zz-evil/"+hostileName {
		t.Errorf("the row shows %q, want the name as text %q", name, "zz-evil/"+hostileName)
	}
	if n := b.Count("main img"); n != 0 {
		t.Errorf("the name became %d <img> elements", n)
	}
	if browsertest.Eval[bool](b, `window.__pwned === 1`) {
		t.Errorf("the hostile name's script ran")
	}
	// And on its own page, where it is the title.
	b.Click(".overview-list .vrow")
	b.WaitVisible("h1")
	b.Eventually("the object page shows the name as its title", fmt.Sprintf(`document.querySelector('h1').textContent === %q`, hostileName))
	if n := b.Count("main img"); n != 0 || browsertest.Eval[bool](b, `window.__pwned === 1`) {
		t.Errorf("the object page turned the name into markup")
	}
}

func TestTheOverviewIsKeyboardNavigable(t *testing.T) {
	b, _, _ := signedIn(t)
	if n := b.Count(`.overview-list .vrow[tabindex="0"]`); n != 1 {
		t.Fatalf("%d rows are tab stops, want one (a roving tabindex)", n)
	}
	b.Focus(`.overview-list .vrow[tabindex="0"]`)
	b.Key(kb.ArrowDown + kb.ArrowDown)
	if i := browsertest.Eval[string](b, `document.activeElement.dataset.index`); i != "2" {
		t.Fatalf("after two Down keys the focus is on row %q, want 2", i)
	}
	want := browsertest.Eval[string](b, `document.activeElement.querySelector('a').getAttribute('href')`)
	b.Key(kb.Enter)
	b.Eventually("Enter opens the row's object", fmt.Sprintf(`location.hash === %q`, want))
	b.WaitVisible("#act-reconcile")
	// End jumps to the last row, drawing it.
	browsertest.Eval[bool](b, `history.back(), true`)
	b.WaitVisible(".overview-list .vrow:not(.loading)")
	b.Focus(`.overview-list .vrow[tabindex="0"]`)
	b.Key(kb.End)
	b.Eventually("End moves the focus to the last row", `document.activeElement.dataset.index === '1005'`)
}

func TestTheObjectPageShowsATreeOf2000ObjectsAndItsActions(t *testing.T) {
	b, api, base := signedIn(t)
	start := time.Now()
	b.Go(base+"/#/k/kustomization/team-0/app-0000", ".tree .vrow")
	b.Eventually("the tree counts 2,000 objects", `document.querySelector('#s-tree').textContent.includes('(2000)')`)
	t.Logf("tree of 2,000 objects drawn %s after the page was opened", time.Since(start).Round(time.Millisecond))
	if n := b.Count(".tree .vrow"); n > 80 {
		t.Errorf("%d tree rows in the DOM for 2,000 objects", n)
	}
	if got := b.Text(`.tree .vrow[data-index="1"] .badge`); got != "Degraded" {
		t.Errorf("the second Deployment's health reads %q, want Degraded", got)
	}
	if got := b.Text(`.tree .vrow[data-index="1"] .reason`); got != "ProgressDeadlineExceeded" {
		t.Errorf("the second Deployment's reason reads %q", got)
	}
	// Right opens a Deployment, showing its ReplicaSet; Enter on that opens its page.
	b.Focus(`.tree .vrow[data-index="0"]`)
	b.Key(kb.ArrowRight)
	b.Eventually("the Deployment opens", `document.querySelector('.tree .vrow[data-index="0"]').getAttribute('aria-expanded') === 'true'`)
	if got := b.Text(`.tree .vrow[data-index="1"] .kind`); got != "ReplicaSet" {
		t.Errorf("under the open Deployment the next row is a %q, want its ReplicaSet", got)
	}
	b.Screenshot("object")

	// The facts and the hooks.
	facts := b.Text(".facts")
	for _, want := range []string{"GitRepository team-0/apps", "Succeeded", "main@0123456"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the facts %q do not show %q", facts, want)
		}
	}
	if hooks := b.Text("#s-hooks + .section-body"); !strings.Contains(hooks, "PreSync") || !strings.Contains(hooks, "migrate") {
		t.Errorf("the hooks section reads %q", hooks)
	}

	// Suspend: a POST with the CSRF header (fakeAPI refuses it without),
	// the result next to the button, then Resume in its place.
	b.Click("#act-suspend")
	b.Eventually("the result says suspended", `document.querySelector('#action-result').textContent === 'Suspended'`)
	b.Eventually("Resume replaces Suspend", `!document.querySelector('#act-resume').hidden && document.querySelector('#act-suspend').hidden`)
	if p := api.postsTo("/team-0/app-0000/suspend"); len(p) != 1 {
		t.Errorf("%d suspend requests, want 1", len(p))
	}
	b.Click("#act-reconcile")
	b.Eventually("the result says reconcile requested", `document.querySelector('#action-result').textContent === 'Reconcile requested'`)
	if p := api.postsTo("/team-0/app-0000/reconcile"); len(p) != 1 || p[0].Body["withSource"] != true {
		t.Errorf("reconcile requests %v, want one with withSource true", p)
	}
	if got := b.Text("#announce"); got == "" {
		b.Eventually("the live region announces the result", `document.querySelector('#announce').textContent !== ''`)
	}

	// Two revisions picked: their diff, asked for by the renders' digests.
	compareRevisions(t, b, api, "team-0/app-0000", 0, 2, "main@aaaaaaa → main@ccccccc",
		"sha256:"+strings.Repeat("d", 64), "sha256:"+strings.Repeat("c", 64))
	b.Screenshot("revisions")
}

func TestAManualKustomizationShowsWhatWaitsAndSyncs(t *testing.T) {
	b, api, base := signedIn(t)
	// An automatic one offers no Sync.
	b.Go(base+"/#/k/kustomization/team-0/app-0000", "#act-reconcile")
	b.Eventually("the page is loaded", `document.querySelector('.facts').textContent.includes('GitRepository')`)
	if !browsertest.Eval[bool](b, `document.querySelector('#act-sync').hidden`) {
		t.Errorf("an automatic Kustomization offers Sync")
	}
	if got := b.Text("#out-of-sync"); got != "" {
		t.Errorf("an automatic Kustomization shows %q as out of sync", got)
	}

	b.Go(base+"/#/k/kustomization/team-4/"+manualName, "#act-reconcile")
	b.Eventually("Sync is offered", `!document.querySelector('#act-sync').hidden`)
	b.Eventually("what waits is shown", `document.querySelector('#out-of-sync').textContent.includes('waits for a manual sync')`)
	box := b.Text("#out-of-sync")
	for _, want := range []string{"main@fedcba9", "1 to create: ConfigMap/team-4/new", "1 to change: Deployment/team-4/web"} {
		if !strings.Contains(box, want) {
			t.Errorf("the out-of-sync box %q does not say %q", box, want)
		}
	}
	if strings.Contains(box, "to prune") {
		t.Errorf("the out-of-sync box %q lists prunes when there are none", box)
	}
	b.Screenshot("out-of-sync")
	b.Click("#act-sync")
	b.Eventually("the result says sync requested", `document.querySelector('#action-result').textContent === 'Sync requested'`)
	if p := api.postsTo("/team-4/" + manualName + "/sync"); len(p) != 1 {
		t.Errorf("%d sync requests, want 1", len(p))
	}
	b.Eventually("the page refetched: nothing waits any more", `document.querySelector('#out-of-sync').textContent === ''`)
}

// compareRevisions picks the revisions listed at i and j on the page of
// the Kustomization nsName, compares them, and checks the diff's title and
// that the diff was asked for from one id to the other.
func compareRevisions(t *testing.T, b *browsertest.Browser, api *fakeAPI, nsName string, i, j int, title, from, to string) {
	t.Helper()
	b.Click(fmt.Sprintf("#rev-%d", i))
	b.Click(fmt.Sprintf("#rev-%d", j))
	b.Click("#compare")
	b.Eventually("the diff between two revisions is shown", `document.querySelector('.rev-diff').textContent.includes('containers[0].image')`)
	if got := b.Text(".rev-diff h3"); got != title {
		t.Errorf("the revisions diff is titled %q, want %q (older → newer)", got, title)
	}
	if heads := b.Text(".rev-diff thead"); !strings.Contains(heads, "Older render") || strings.Contains(heads, "Live") || strings.Contains(heads, "Changed by") {
		t.Errorf("the revisions diff's columns read %q: two renders have no live side and no field manager", heads)
	}
	diffs := api.queriesOf("/api/objects/kustomization/" + nsName + "/revisions")
	if last := diffs[len(diffs)-1]; last.Get("from") != from || last.Get("to") != to {
		t.Errorf("the diff was asked for with %v, want from %s to %s", last, from, to)
	}
}

func TestTwoRendersOfOneRevisionAreToldApartAndCompared(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-2/"+rerenderedName, "#rev-2")
	first, second := b.Text(`label[for="rev-1"]`), b.Text(`label[for="rev-0"]`)
	if !strings.Contains(first, "render 1111111") || !strings.Contains(second, "render 2222222") {
		t.Errorf("the two renders of main@bbbbbbb read %q and %q, want each named by its render", first, second)
	}
	if !strings.Contains(first, "×2") || !strings.Contains(second, "HealthCheckFailed") {
		t.Errorf("the entries read %q and %q, want the sync count and the outcome", first, second)
	}
	if n := b.Count(`label[for="rev-0"] .badge.s-Failed`); n != 1 {
		t.Errorf("the failed sync's outcome is not shown as a failure")
	}
	compareRevisions(t, b, api, "team-2/"+rerenderedName, 0, 1, "main@bbbbbbb (render 1111111) → main@bbbbbbb (render 2222222)",
		firstRenderDigest, rerenderedDigest)
	b.Screenshot("revisions-rerendered")
}

func TestAnActionTheUserMayNotDoSaysNotAllowed(t *testing.T) {
	b, _, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-1/"+forbiddenName, "#act-suspend")
	b.Click("#act-suspend")
	b.Eventually("the result says not allowed", `document.querySelector('#action-result').textContent === 'Suspend: not allowed'`)
	if !browsertest.Eval[bool](b, `!document.querySelector('#act-suspend').disabled`) {
		t.Errorf("the button stays disabled after the refusal")
	}
}

func TestTheAppliedObjectShowsWhoChangedEachFieldAndMakesAnIgnoreRule(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-0/app-0000/o/"+url.PathEscape("apps/Deployment/team-0/web-0"), ".diff-line")
	line := browsertest.Eval[[]string](b, `[...document.querySelector('.diff-line').children].map((c) => c.textContent)`)
	if strings.Join(line[:5], " ") != "spec.replicas 5 → 2 changed by kubectl-edit" {
		t.Errorf("the first diff line reads %q, want spec.replicas 5 → 2 changed by kubectl-edit", line)
	}
	if got := b.Text(".head-status .badge"); got != "Healthy" {
		t.Errorf("the health reads %q", got)
	}
	if ev := b.Text("#s-events + .section-body"); !strings.Contains(ev, "ScalingReplicaSet") {
		t.Errorf("the events section reads %q", ev)
	}
	b.Click(`.diff-line button.ignore[data-path="spec.replicas"]`)
	b.WaitVisible("#ignore-yaml")
	if y := b.Text("#ignore-yaml"); !strings.Contains(y, "paths: [spec.replicas]") {
		t.Errorf("the ignore rule reads %q", y)
	}
	if p := api.postsTo("/ignore"); len(p) != 1 || p[0].Body["apply"] != false || p[0].Body["path"] != "spec.replicas" || p[0].Body["id"] != "apps/Deployment/team-0/web-0" {
		t.Errorf("ignore requests %v, want one for spec.replicas with apply false", p)
	}
	b.Screenshot("applied")
	// The rule by the field's manager instead: the page asks again.
	b.Click("#ignore-as-manager")
	b.Eventually("the manager's rule is shown", `document.querySelector('#ignore-yaml').textContent.includes('managedFieldsManagers: [kubectl-edit]')`)
	if p := api.postsTo("/ignore"); len(p) != 2 || p[1].Body["as"] != "manager" || p[1].Body["manager"] != "kubectl-edit" || p[1].Body["apply"] != false {
		t.Errorf("ignore requests %v, want a second one as manager kubectl-edit", p)
	}
	b.Click("#apply-ignore")
	b.Eventually("the rule is applied", `document.querySelector('.ignore-panel .action-result').textContent === 'Applied: spec.replicas is ignored'`)
	if p := api.postsTo("/ignore"); len(p) != 3 || p[2].Body["apply"] != true || p[2].Body["as"] != "manager" {
		t.Errorf("ignore requests %v, want a third one applying the manager's rule", p)
	}
}

// No comparison is not "In sync": a user who may not dry-run an apply is
// told why there is no diff.
func TestAnObjectThatCannotBeComparedSaysWhy(t *testing.T) {
	b, _, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-0/app-0000/o/"+url.PathEscape("apps/Deployment/team-0/locked"), ".diff-unavailable")
	got := b.Text(".diff-unavailable")
	if !strings.Contains(got, "Not compared") || !strings.Contains(got, "may not dry-run") || !strings.Contains(got, "cannot patch") {
		t.Errorf("the diff section reads %q", got)
	}
	if n := browsertest.Eval[int](b, `document.querySelectorAll('.in-sync').length`); n != 0 {
		t.Errorf("the page shows %d In sync notes for an object it could not compare", n)
	}
}

func TestTheDriftTimelineMarksDetectedAndCorrected(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/drift", ".stream .entry")
	first := b.Text(".stream .entry:nth-child(1) .entry-head")
	second := b.Text(".stream .entry:nth-child(2) .entry-head")
	if !strings.Contains(first, "Corrected") || !strings.Contains(first, "reverted in 183ms") {
		t.Errorf("the newest entry reads %q, want Corrected with its latency", first)
	}
	if !strings.Contains(second, "Drift detected") || strings.Contains(second, "reverted") {
		t.Errorf("the second entry reads %q, want Drift detected without a latency", second)
	}
	if c := b.Text(".stream .entry:nth-child(2) .diff-line"); !strings.Contains(c, "spec.replicas") || !strings.Contains(c, "changed by kubectl-edit") {
		t.Errorf("the detected entry's change reads %q", c)
	}
	b.Screenshot("drift")
	b.Type("#f-name", "app-0003")
	b.Eventually("the timeline narrows to one object", `document.querySelectorAll('.stream .entry').length === 1`)
	qs := api.queriesOf("/api/drift")
	if q := qs[len(qs)-1]; q.Get("name") != "app-0003" {
		t.Errorf("the last drift query was %v, want name=app-0003", q)
	}
	if c := b.Text(".stream .entry:nth-child(1) .diff-line:nth-child(2)"); !strings.Contains(c, "Secret/kube-system/admin") || !strings.Contains(c, "(hidden)") {
		t.Errorf("a change of an object the user may not read reads %q, want its values hidden", c)
	}
}

func TestTheEventHistoryPagesBackwardsAndFilters(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/events", ".stream .entry")
	if n := b.Count(".stream .entry"); n != 100 {
		t.Errorf("%d events on the first page, want 100", n)
	}
	b.Screenshot("events")
	b.Click("#older")
	b.Eventually("the second page is appended", `document.querySelectorAll('.stream .entry').length === 200`)
	qs := api.queriesOf("/api/events")
	if q := qs[len(qs)-1]; q.Get("before") != "151" {
		t.Errorf("the older page was asked with before=%q, want 151 (the oldest seq shown)", q.Get("before"))
	}
	b.SetValue("#f-severity", "error")
	b.Eventually("only errors are listed", `document.querySelectorAll('.stream .entry').length === 25 && document.querySelectorAll('.stream .entry.sev-error').length === 25`)
}

func TestAnEmptyPageThatEndedEarlyOffersTheOlderOnes(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/events?reason="+slowReason, "#older:not([hidden])")
	asked := len(api.queriesOf("/api/events"))
	b.Click("#older")
	// The first page is empty too: wait for the request of the older
	// one, not for an empty list, which may be the first page's still.
	var befores []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		befores = befores[:0]
		for _, q := range api.queriesOf("/api/events")[asked:] {
			befores = append(befores, q.Get("before"))
		}
		if slices.Contains(befores, "120") {
			break
		}
	}
	if !slices.Contains(befores, "120") {
		t.Errorf("the older page was asked with before=%q, want the server's 120", befores)
	}
	b.Eventually("the older page is shown", `document.querySelector('.stream .empty') !== null`)
}

func TestALiveChangeUpdatesTheRowInPlace(t *testing.T) {
	b, api, _ := signedIn(t)
	waitListening(t, api)
	target := browsertest.Eval[string](b, `(() => { const r = document.querySelector('.overview-list .vrow[data-index="5"]'); r.__before = true; return r.querySelector('.name').textContent; })()`)
	ns, name, _ := strings.Cut(target, "/")
	before := len(api.queriesOf("/api/overview"))
	api.set("Kustomization", ns, name, "ready", "False")
	api.push("Kustomization", ns, name, "HealthCheckFailed")
	b.Eventually("the row shows NotReady", `document.querySelector('.overview-list .vrow[data-index="5"] .badge').textContent === 'NotReady'`)
	if !browsertest.Eval[bool](b, `document.querySelector('.overview-list .vrow[data-index="5"]').__before === true`) {
		t.Errorf("the row element was replaced; a live update must fill the row in place")
	}
	after := api.queriesOf("/api/overview")[before:]
	if len(after) != 1 || after[0].Get("offset") != "0" {
		t.Errorf("the change refetched %v; want the one page that shows the object", after)
	}
}

func TestALiveChangeRefetchesTheObjectPageInPlace(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-0/app-0000", ".tree .vrow")
	browsertest.Eval[bool](b, `(() => { const l = document.querySelector('.tree'); l.scrollTop = 3000; return true; })()`)
	b.Eventually("the tree scrolled", `document.querySelector('.tree').scrollTop === 3000`)
	before := len(api.queriesOf("/api/objects/kustomization/team-0/app-0000"))
	api.set("Kustomization", "team-0", "app-0000", "reason", "HealthCheckFailed")
	api.set("Kustomization", "team-0", "app-0000", "ready", "False")
	api.push("Kustomization", "team-0", "app-0000", "HealthCheckFailed")
	api.push("Kustomization", "team-0", "app-0000", "HealthCheckFailed") // debounced into one refetch
	b.Eventually("the header shows the new state", `document.querySelector('.head-status').textContent.includes('NotReady HealthCheckFailed')`)
	if got := len(api.queriesOf("/api/objects/kustomization/team-0/app-0000")) - before; got != 1 {
		t.Errorf("two changes made %d refetches, want 1", got)
	}
	if top := browsertest.Eval[int](b, `document.querySelector('.tree').scrollTop`); top != 3000 {
		t.Errorf("the tree scrolled to %d on a live update; it must stay where the user was (3000)", top)
	}
}

func TestAfterTheLiveStreamDropsThePageCatchesUp(t *testing.T) {
	b, api, _ := signedIn(t)
	waitListening(t, api)
	target := b.Text(`.overview-list .vrow[data-index="6"] .name`)
	ns, name, _ := strings.Cut(target, "/")
	api.dropStreams()
	// Changed while no stream is open: no change message will say so.
	api.set("Kustomization", ns, name, "suspended", true)
	waitListening(t, api)
	b.Eventually("the reconnected page refetches and shows the row Suspended",
		`document.querySelector('.overview-list .vrow[data-index="6"] .badge').textContent === 'Suspended'`)
}

func waitListening(t *testing.T, api *fakeAPI) {
	t.Helper()
	deadline := time.Now().Add(browsertest.StepTimeout)
	for !api.listening() {
		if time.Now().After(deadline) {
			t.Fatal("the page did not open /api/live")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewDriftArrivesLiveAtTheTop(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/drift", ".stream .entry")
	api.mu.Lock()
	api.newDrift = append(api.newDrift, map[string]any{"seq": 99, "time": time.Now().UTC().Format(time.RFC3339),
		"kind": "Kustomization", "namespace": "team-5", "name": "app-0005", "reason": "DriftDetected",
		"changes": []map[string]any{{"object": "/ConfigMap/team-5/settings", "path": "data.mode", "before": `"debug"`, "after": `"prod"`, "manager": "kubectl-edit"}}})
	api.mu.Unlock()
	api.push("Kustomization", "team-5", "app-0005", "DriftDetected")
	b.Eventually("the new entry is first", `document.querySelector('.stream .entry').dataset.seq === '99'`)
	if n := b.Count(".stream .entry"); n != 4 {
		t.Errorf("%d entries after one new one, want 4 (no duplicates)", n)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Each earlier entry of the Applied revisions list has a Rollback button:
// a POST of that render's digest with the user's session; the page then
// shows the hold and offers Resume.
func TestRollbackFromTheAppliedRevisionsListShowsTheHold(t *testing.T) {
	b, api, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-0/app-0020", "#rollback-1")
	if n := b.Count("#rollback-0"); n != 0 {
		t.Errorf("the revision applied now has a Rollback button")
	}
	if !browsertest.Eval[bool](b, `document.querySelector('#act-resume').hidden`) {
		t.Errorf("Resume shows before anything is suspended or rolled back")
	}
	b.Click("#rollback-1")
	b.Eventually("the result says rolled back", `document.querySelector('#rollback-result').textContent === 'Rolled back to main@bbbbbbb: held until resumed'`)
	p := api.postsTo("/team-0/app-0020/rollback")
	if len(p) != 1 || p[0].Body["digest"] != "sha256:"+strings.Repeat("b", 64) {
		t.Fatalf("rollback requests %v, want one with the second entry's digest", p)
	}
	b.Eventually("the page shows the hold", `(document.querySelector('#rolled-back') || {}).textContent?.includes('is rendered but not applied')`)
	b.Eventually("Resume is offered", `!document.querySelector('#act-resume').hidden`)
	b.Screenshot("rolled-back")
}

// A Pod in the tree opens its log view (docs/ui.md, "A Pod's log"): a Pod
// a workload owns is in no inventory, so it has no applied-object page.
func TestATreesPodOpensItsLogView(t *testing.T) {
	b, _, base := signedIn(t)
	b.Go(base+"/#/k/kustomization/team-0/app-0000", ".tree .vrow")
	b.Focus(`.tree .vrow[data-index="0"]`)
	b.Key(kb.ArrowRight)
	b.Eventually("the Deployment opens", `document.querySelector('.tree .vrow[data-index="1"] .kind').textContent === 'ReplicaSet'`)
	b.Focus(`.tree .vrow[data-index="1"]`)
	b.Key(kb.ArrowRight)
	b.Eventually("the ReplicaSet opens", `document.querySelector('.tree .vrow[data-index="2"] .kind').textContent === 'Pod'`)
	b.Focus(`.tree .vrow[data-index="2"]`)
	b.Key(kb.Enter)
	b.Eventually("Enter opens the Pod's log view", `location.hash === '#/k/kustomization/team-0/app-0000/pod/team-0/web-0-7d9f-0'`)
	b.WaitVisible("#log-container")
}
