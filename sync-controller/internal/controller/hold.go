package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// A rollback (docs/design/sync-engine.md, "Rollback") is asked with the
// annotation plumb.dev/rollback, whose value is the digest of an earlier
// render in status.history (`plumb rollback` writes it). While it is
// there, every run syncs that render instead of the newest one: apply,
// prune (under the prune guard), health and drift correction all work on
// it, and new renders are made by render-controller but not applied — the
// hold. render-controller keeps the files of every render status.history
// names, beside the newest one, so the earlier render is downloaded from
// the same folder by its digest and verified by it.
//
// The hold ends when the annotation goes (`plumb resume`), or, with
// plumb.dev/rollback-follow-git, at the first render whose digest is not
// the one that was current when the rollback was asked: sync-controller
// then removes both annotations and the newest render is synced.

// rollbackRequest is what plumb.dev/rollback asks: the digest of the
// render to sync, and with follow-git the digest that was newest then.
type rollbackRequest struct{ digest, follow string }

func askedRollback(o client.Object) rollbackRequest {
	ann := o.GetAnnotations()
	return rollbackRequest{digest: ann[kustomizev1.RollbackAnnotation], follow: ann[kustomizev1.RollbackFollowGitAnnotation]}
}

// endedBy says follow-git has ended the rollback: newest, a render other
// than the one it named, is the new revision it waited for.
func (r rollbackRequest) endedBy(newest *meta.Artifact) bool {
	return r.follow != "" && newest.Digest != r.follow
}

// rollbackHold is the render a run syncs instead of the newest one.
type rollbackHold struct {
	// artifact is the earlier render, beside the newest one.
	artifact *meta.Artifact
	// current is the revision rendered now and held back.
	current string
}

// holdRollback is the step that makes the run sync the render
// plumb.dev/rollback names (see above) and says so: RolledBack=True
// (reason RolledBack) naming that render's revision and the newest one,
// not applied, and a RolledBack event when that changes. With no
// annotation, or once follow-git ends the hold, it removes RolledBack
// with a RollbackEnded event. A digest that status.history does not have
// sets Stalled=True and Ready=False reason RollbackUnavailable: nothing
// is applied until the annotation changes. For a HelmRelease the run is a
// rollback release (rollback.go): Helm's rollback hooks and settings, and
// a release recorded as `helm rollback` records it.
func (s *syncRun) holdRollback(ctx context.Context) error {
	asked := askedRollback(s.obj)
	digest, follow := asked.digest, asked.follow
	current := s.app.rendered()
	if digest == "" {
		s.endHold("the rollback annotation was removed")
		return nil
	}
	if current == nil {
		return nil // loadManifests waits for a render
	}
	if asked.endedBy(current) {
		if err := s.releaseHold(ctx, digest, follow); err != nil {
			return err
		}
		s.endHold(fmt.Sprintf("revision %s is a new render (follow-git)", current.Revision))
		return nil
	}
	if s.window != nil && s.window.rollback {
		// A sync window holds the rollback (gateSyncWindow): the render
		// synced last stays until the windows open or let manual syncs
		// through; its message names both holds.
		return nil
	}
	revision, snapshot, ok := historyEntry(s.obj, digest)
	if !ok {
		conditions.Delete(s.out, kustomizev1.RolledBackCondition)
		return reconcile.Stalled(kustomizev1.RollbackUnavailableReason, fmt.Errorf(
			"%s names render %s, which status.history does not have: nothing is applied; roll back to an entry of status.history, or end the rollback (plumb resume %s %s)",
			kustomizev1.RollbackAnnotation, digest, strings.ToLower(s.owner.Kind), s.obj.GetName()))
	}
	s.hold = &rollbackHold{artifact: besideArtifact(current, digest, revision), current: current.Revision}
	if snapshot != nil {
		s.rel = &releaseRun{hr: s.obj.(*helmv2.HelmRelease), action: rollbackRelease, target: snapshot, requested: true}
		s.rollbackSettings()
	}
	until := fmt.Sprintf("plumb resume %s %s", strings.ToLower(s.owner.Kind), s.obj.GetName())
	if follow != "" {
		until = "the next new revision (follow-git), or " + until
	}
	msg := fmt.Sprintf("rolled back to revision %s (render %s); revision %s is rendered but not applied until %s",
		revision, shortDigest(digest), current.Revision, until)
	if prev := conditions.Get(s.obj, kustomizev1.RolledBackCondition); prev == nil || prev.Status != metav1.ConditionTrue || prev.Message != msg {
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.RolledBackReason, msg, events.WithRevision(revision))
	}
	conditions.MarkTrue(s.out, kustomizev1.RolledBackCondition, kustomizev1.RolledBackReason, "%s", msg)
	return nil
}

// endHold removes RolledBack, with a RollbackEnded event saying why, when
// a rollback held the object until now.
func (s *syncRun) endHold(why string) {
	if !conditions.IsTrue(s.obj, kustomizev1.RolledBackCondition) {
		conditions.Delete(s.out, kustomizev1.RolledBackCondition)
		return
	}
	conditions.Delete(s.out, kustomizev1.RolledBackCondition)
	msg := "rollback ended: " + why + "; syncing the newest render"
	switch a := s.app.rendered(); {
	case s.window != nil:
		// The newest render is new to the cluster: the windows hold it.
		msg = "rollback ended: " + why + "; " + s.window.message
	case a != nil:
		msg = fmt.Sprintf("rollback ended: %s; syncing revision %s", why, a.Revision)
	}
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.RollbackEndedReason, msg)
}

// releaseHold removes the two rollback annotations, as they were read, so
// that a later render of the digest follow-git named does not bring the
// hold back. The patch tests their values first: a rollback asked again
// meanwhile is left alone (and its patch refused, which is no error).
func (s *syncRun) releaseHold(ctx context.Context, digest, follow string) error {
	var ops []map[string]any
	for _, a := range []struct{ key, value string }{
		{kustomizev1.RollbackAnnotation, digest}, {kustomizev1.RollbackFollowGitAnnotation, follow},
	} {
		p := "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(a.key, "~", "~0"), "/", "~1")
		ops = append(ops, map[string]any{"op": "test", "path": p, "value": a.value}, map[string]any{"op": "remove", "path": p})
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	obj := s.obj.DeepCopyObject().(client.Object)
	err = s.r.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
	var status apierrors.APIStatus
	if errors.As(err, &status) && (status.Status().Code == http.StatusUnprocessableEntity || apierrors.IsNotFound(err)) {
		return nil // a test failed: the annotations changed meanwhile; or the object is gone
	}
	if err != nil {
		return fmt.Errorf("ending the rollback's hold: %w", err)
	}
	return nil
}

// historyEntry finds digest in obj's status.history: the source revision
// it was rendered from and, for a HelmRelease, the newest release of it.
func historyEntry(obj reconcile.Object, digest string) (revision string, release *helmv2.Snapshot, ok bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		for _, h := range o.Status.History {
			if h.Digest == digest {
				return h.Metadata[meta.HistoryRevisionKey], nil, true
			}
		}
	case *helmv2.HelmRelease:
		for i := range o.Status.History {
			if h := o.Status.History[i]; h.Digest == digest {
				return h.ChartVersion, &h, true
			}
		}
	}
	return "", nil, false
}

// besideArtifact is the artifact of the earlier render digest, a file in
// the folder of current (the render the object serves now), where
// render-controller keeps the renders status.history names.
func besideArtifact(current *meta.Artifact, digest, revision string) *meta.Artifact {
	_, hex, _ := strings.Cut(digest, ":")
	name := hex + ".yaml"
	return &meta.Artifact{
		URL:      strings.TrimSuffix(current.URL, path.Base(current.URL)) + name,
		Path:     path.Join(path.Dir(current.Path), name),
		Revision: revision,
		Digest:   digest,
	}
}

// shortDigest is digest cut for messages: "sha256:" and 12 hex digits.
func shortDigest(digest string) string {
	if len(digest) > len("sha256:")+12 {
		return digest[:len("sha256:")+12]
	}
	return digest
}

// rolledBackNote ends Ready's message while a rollback holds the object:
// the RolledBack condition's message.
func rolledBackNote(obj conditions.Getter) string {
	if c := conditions.Get(obj, kustomizev1.RolledBackCondition); c != nil && c.Status == metav1.ConditionTrue {
		return "; " + c.Message
	}
	return ""
}

// rollbackChanged passes updates that change the rollback annotations, so
// a rollback, or its end, is acted on at once.
type rollbackChanged struct{ predicate.Funcs }

func (rollbackChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	return o[kustomizev1.RollbackAnnotation] != n[kustomizev1.RollbackAnnotation] ||
		o[kustomizev1.RollbackFollowGitAnnotation] != n[kustomizev1.RollbackFollowGitAnnotation]
}
