package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/object"
)

// revisionsPage is the answer of GET .../revisions?from=&to=.
type revisionsPage struct {
	// Revisions are the applied revisions status knows of, newest first.
	Revisions []revision `json:"revisions"`
	// Retained says what is kept and what is not, in words.
	Retained string `json:"retained"`
	// Diff is, given from and to, the object-level diff from the render
	// of from to that of to: a row per changed field, and one per object
	// created or deleted (with Action and no Path).
	Diff []revisionChange `json:"diff,omitempty"`
	// DiffUnavailable says why there is no diff: a render no longer
	// served (Gone names it).
	DiffUnavailable *rendersGone `json:"diffUnavailable,omitempty"`
}

// revision is one applied (or newest) revision.
type revision struct {
	// ID names the revision in from= and to= (its Revision does too, for
	// the newest entry with that revision): a HelmRelease's release
	// version, a Kustomization render's digest.
	ID       string `json:"id"`
	Revision string `json:"revision"`
	// Version is a HelmRelease's release number.
	Version int `json:"version,omitempty"`
	// Digest is the digest of the rendered artifact.
	Digest string `json:"digest,omitempty"`
	// Status: a release's deployed, superseded or failed; a
	// Kustomization sync's lastReconciledStatus (Succeeded, or the reason
	// it failed), or rendered for a newest render not synced yet.
	Status string `json:"status"`
	// Time is when the release or sync last finished (the render's
	// lastUpdateTime for one not synced yet).
	Time string `json:"time,omitempty"`
	// Syncs counts a Kustomization's syncs of the render
	// (totalReconciliations).
	Syncs int64 `json:"syncs,omitempty"`
}

// revisionChange is one row of the diff between two renders.
type revisionChange struct {
	// Object is pkg/object's ID text.
	Object string `json:"object"`
	// Action is Created or Deleted for a whole object, Configured for a
	// changed field.
	Action diff.Action `json:"action"`
	Path   string      `json:"path,omitempty"`
	Before string      `json:"before,omitempty"`
	After  string      `json:"after,omitempty"`
}

// rendersGone says which renders are not at hand.
type rendersGone struct {
	Reason string   `json:"reason"`
	Gone   []string `json:"gone,omitempty"`
}

const (
	helmRetained = "status.history keeps the newest releases; render-controller serves the newest renders " +
		"(it garbage-collects older ones), so a diff with an old release may find its render gone"
	kustomizationRetained = "status.history keeps the newest syncs, one per render; render-controller serves the " +
		"newest renders (--artifact-retention-records, it garbage-collects older ones), so a diff with an old sync " +
		"may find its render gone"
)

// digestPattern is the form of a render's digest.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func (h *handlers) revisions(r *request) (any, error) {
	a, ok := inspect.AppliedOf(r.obj)
	if !ok {
		return nil, notFound("a %s applies no revisions", r.kind.GVK.Kind)
	}
	page := &revisionsPage{}
	// artifacts maps a revision id to its render, as far as it can be named.
	artifacts := map[string]*meta.Artifact{}
	switch o := r.obj.(type) {
	case *helmv2.HelmRelease:
		page.Retained = helmRetained
		for _, s := range o.Status.History {
			id := strconv.Itoa(s.Version)
			page.Revisions = append(page.Revisions, revision{ID: id, Revision: s.ChartName + "@" + s.ChartVersion, Version: s.Version, Digest: s.Digest,
				Status: s.Status, Time: s.LastDeployed.UTC().Format(time.RFC3339)})
			servedRender(artifacts, a.Rendered, id, s.Digest, s.ChartVersion)
		}
	case *kustomizev1.Kustomization:
		page.Retained = kustomizationRetained
		page.Revisions = kustomizationRevisions(o, artifacts)
	}
	if page.Revisions == nil {
		page.Revisions = []revision{}
	}
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	if from == "" && to == "" {
		return page, nil
	}
	if from == "" || to == "" {
		return nil, badRequest("give both from and to")
	}
	ids := [2]string{}
	for i, given := range []string{from, to} {
		if len(given) > 300 {
			return nil, badRequest("revision %q… is too long", given[:80])
		}
		id, ok := lookupRevision(page.Revisions, given)
		if !ok {
			return nil, notFound("revision %q is not one of %s's (see revisions[].id)", given, r.obj.GetName())
		}
		ids[i] = id
	}
	changes, gone, err := h.diffRenders(r.Context(), r, a, ids[0], ids[1], artifacts)
	if err != nil {
		return nil, err
	}
	page.Diff, page.DiffUnavailable = changes, gone
	return page, nil
}

// kustomizationRevisions lists a Kustomization's status.history, newest
// first, and before it the newest render when no sync of it is recorded
// yet (it waits, or failed before applying): a revision's id is its
// render's digest.
func kustomizationRevisions(ks *kustomizev1.Kustomization, artifacts map[string]*meta.Artifact) []revision {
	var out []revision
	newest := ks.Status.RenderedArtifact
	if newest != nil && !slices.ContainsFunc(ks.Status.History, func(s meta.Snapshot) bool { return s.Digest == newest.Digest }) {
		out = append(out, revision{ID: newest.Digest, Revision: newest.Revision, Digest: newest.Digest, Status: "rendered",
			Time: newest.LastUpdateTime.UTC().Format(time.RFC3339)})
		servedRender(artifacts, newest, newest.Digest, newest.Digest, newest.Revision)
	}
	for _, s := range ks.Status.History {
		rev := s.Metadata[meta.HistoryRevisionKey]
		out = append(out, revision{ID: s.Digest, Revision: rev, Digest: s.Digest, Status: s.LastReconciledStatus,
			Time: s.LastReconciled.UTC().Format(time.RFC3339), Syncs: s.TotalReconciliations})
		servedRender(artifacts, newest, s.Digest, s.Digest, rev)
	}
	return out
}

// servedRender names, under id, the render of digest as render-controller
// serves it beside the newest one (siblingArtifact), with its revision:
// both kinds' history entries are found so.
func servedRender(artifacts map[string]*meta.Artifact, newest *meta.Artifact, id, digest, revision string) {
	if sibling := siblingArtifact(newest, digest); sibling != nil {
		sibling.Revision = revision
		artifacts[id] = sibling
	}
}

// siblingArtifact is the artifact of another render of the same object:
// render-controller stores each as <hex digest>.yaml beside the newest.
func siblingArtifact(newest *meta.Artifact, digest string) *meta.Artifact {
	if newest == nil || !digestPattern.MatchString(digest) {
		return nil
	}
	if digest == newest.Digest {
		a := *newest
		return &a
	}
	u, err := url.Parse(newest.URL)
	if err != nil {
		return nil
	}
	name := strings.TrimPrefix(digest, "sha256:") + ".yaml"
	u.Path = path.Join(path.Dir(u.Path), name)
	return &meta.Artifact{Path: path.Join(path.Dir(newest.Path), name), URL: u.String(), Digest: digest}
}

// lookupRevision finds a revision by its id, else by its revision (the
// newest entry with it).
func lookupRevision(revs []revision, given string) (string, bool) {
	for _, r := range revs {
		if r.ID == given {
			return r.ID, true
		}
	}
	for _, r := range revs {
		if r.Revision == given {
			return r.ID, true
		}
	}
	return "", false
}

// diffRenders downloads both renders and diffs them object by object; or
// says which render is gone.
func (h *handlers) diffRenders(ctx context.Context, r *request, a *inspect.Applied, from, to string, artifacts map[string]*meta.Artifact) ([]revisionChange, *rendersGone, error) {
	hc, err := r.artifactClient()
	if err != nil {
		return nil, nil, err
	}
	var sets [2][]*unstructured.Unstructured
	var gone []string
	for i, id := range []string{from, to} {
		art := artifacts[id]
		if art == nil {
			gone = append(gone, id)
			continue
		}
		objs, err := inspect.FetchRendered(ctx, hc, art)
		var status *fetch.StatusError
		switch {
		case errors.As(err, &status) && status.Code == http.StatusNotFound:
			gone = append(gone, id)
		case err != nil:
			return []revisionChange{}, &rendersGone{Reason: fmt.Sprintf("render %s: %v", id, err)}, nil
		default:
			sets[i] = objs
		}
	}
	if len(gone) > 0 {
		return []revisionChange{}, &rendersGone{Reason: "no longer served by render-controller (or never recorded): " + strings.Join(gone, ", "), Gone: gone}, nil
	}
	redactor, _ := a.SecretRedactor(ctx, r.client)
	out := []revisionChange{}
	for _, res := range diffSets(sets[0], sets[1]) {
		if res.Action != diff.Configured {
			out = append(out, revisionChange{Object: res.Object, Action: res.Action})
			continue
		}
		for _, c := range redactor.Changes(res.Changes) {
			out = append(out, revisionChange{Object: res.Object, Action: res.Action, Path: c.Path, Before: c.Before, After: c.After})
		}
	}
	return out, nil, nil
}

// diffSets compares two renders object by object (pure: pkg/diff, Secrets'
// data redacted); unchanged objects are left out.
func diffSets(from, to []*unstructured.Unstructured) []diff.Result {
	index := func(objs []*unstructured.Unstructured) map[object.ID]*unstructured.Unstructured {
		m := map[object.ID]*unstructured.Unstructured{}
		for _, o := range objs {
			m[object.IDOf(o)] = o
		}
		return m
	}
	a, b := index(from), index(to)
	ids := map[object.ID]bool{}
	for id := range a {
		ids[id] = true
	}
	for id := range b {
		ids[id] = true
	}
	var out []diff.Result
	for id := range ids {
		res := diff.Diff(a[id], b[id], nil)
		if res.Action == diff.Unchanged {
			continue
		}
		res.Object = id.Text()
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object < out[j].Object })
	if out == nil {
		out = []diff.Result{}
	}
	return out
}
