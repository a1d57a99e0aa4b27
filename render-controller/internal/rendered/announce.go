package rendered

import (
	"maps"
	"sync"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
)

// Object is a kind render-controller renders: it has conditions, one of
// which is Rendered.
type Object interface {
	client.Object
	conditions.Setter
}

// Announce sets Rendered=True with msg, the news of the render a that obj
// now serves, and publishes a Rendered event (info, with a's revision, and
// its digest, url and extra in metadata) when news is true: a new
// artifact, or the first good render after a failure (a fixed
// substituteFrom object, a fixed chart), either of which is news for
// whoever got the alert. A render is announced once: a reconcile that runs
// on a cached copy older than its own status write does not record it
// again. The event goes to the stream only (RecordOnStream): the status
// this reconcile writes says the same to a person (renderedArtifact and
// Rendered=True), and sync-controller's Applied event, the one Kubernetes
// Event of a first sync, names the revision and what changed; a failed
// render is a Warning Event (docs/design/events.md).
func (s *Store) Announce(obj Object, a *meta.Artifact, msg string, news bool, extra map[string]string) {
	conditions.MarkTrue(obj, kustomizev1.RenderedCondition, kustomizev1.RenderSucceededReason, "%s", msg)
	if !news || !s.announced.first(client.ObjectKeyFromObject(obj), a.Digest+"@"+a.Revision) {
		return
	}
	md := map[string]string{"digest": a.Digest, "url": a.URL}
	maps.Copy(md, extra)
	s.Events.RecordOnStream(obj, kustomizev1.RenderedReason, msg,
		events.WithRevision(a.Revision), events.WithMetadata(md))
}

// Reconciled is told of every reconcile's outcome: a failure (not a wait
// for a dependency) makes the next good render news again, even when it is
// the one announced before it.
func (s *Store) Reconciled(obj Object) {
	if c := conditions.Get(obj, kustomizev1.RenderedCondition); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason != meta.DependencyNotReadyReason {
		s.announced.first(client.ObjectKeyFromObject(obj), "")
	}
}

// announcements remembers, per object, the render (digest and revision)
// whose Rendered event was sent last.
type announcements struct {
	mu   sync.Mutex
	last map[types.NamespacedName]string
}

// first records render as the one announced for key and reports whether it
// was not already.
func (a *announcements) first(key types.NamespacedName, render string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]string{}
	}
	if a.last[key] == render {
		return false
	}
	a.last[key] = render
	return true
}

// forget drops what is remembered for key.
func (a *announcements) forget(key types.NamespacedName) {
	a.mu.Lock()
	delete(a.last, key)
	a.mu.Unlock()
}
