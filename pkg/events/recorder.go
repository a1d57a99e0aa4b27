package events

import (
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/message"
)

// Publisher sends events to the stream. Publish must not block: an
// implementation queues and retries in the background.
type Publisher interface {
	Publish(e Event)
}

// NopPublisher drops every event; for controllers run without NATS.
type NopPublisher struct{}

// Publish drops the event.
func (NopPublisher) Publish(Event) {}

// KubeNoteMaxBytes bounds the message of a Kubernetes Event: the API server
// refuses an events.k8s.io/v1 Event whose note is longer.
const KubeNoteMaxBytes = 1024

// KubeAction is the action of every Kubernetes Event a Recorder writes
// (events.k8s.io/v1 requires one): what the controller was doing to the
// object, which for Plumb's controllers is always reconciling it.
const KubeAction = "Reconcile"

// Recorder records an event as a Kubernetes Event and publishes it.
type Recorder struct {
	kube       kevents.AnnotatedEventRecorder
	publisher  Publisher
	scheme     *runtime.Scheme
	controller string
	instance   string
}

// NewRecorder returns a recorder writing Kubernetes Events (events.k8s.io/v1)
// through kube, as controller-runtime's mgr.GetEventRecorder returns, and
// stream events through publisher, both signed with the controller's name.
func NewRecorder(kube kevents.AnnotatedEventRecorder, publisher Publisher, scheme *runtime.Scheme, controller string) *Recorder {
	if publisher == nil {
		publisher = NopPublisher{}
	}
	instance, _ := os.Hostname()
	return &Recorder{kube: kube, publisher: publisher, scheme: scheme, controller: controller, instance: instance}
}

// Option adds detail to an event.
type Option func(*Event)

// WithRevision sets the source revision the event concerns.
func WithRevision(revision string) Option { return func(e *Event) { e.Revision = revision } }

// WithMetadata adds key/value pairs to the event's metadata.
func WithMetadata(kv map[string]string) Option {
	return func(e *Event) {
		if len(kv) == 0 {
			return
		}
		if e.Metadata == nil {
			e.Metadata = make(map[string]string, len(kv))
		}
		for k, v := range kv {
			e.Metadata[k] = v
		}
	}
}

// VolatilePrefix starts the metadata keys of details that describe the
// moment rather than the news: a count of replicas at a timeout, a
// back-off duration, an attempt number, a generated name. Repeats of one
// failure differ in them and nothing else, so alert deduplication
// (notification-controller's rate limit) leaves these keys out of an
// event's identity, while providers still show them.
const VolatilePrefix = "volatile."

// WithVolatile adds key/value pairs to the metadata under VolatilePrefix:
// details that change between repeats of the same news (see VolatilePrefix).
func WithVolatile(kv map[string]string) Option {
	prefixed := make(map[string]string, len(kv))
	for k, v := range kv {
		prefixed[VolatilePrefix+k] = v
	}
	return WithMetadata(prefixed)
}

// IsVolatile reports whether a metadata key names a volatile detail
// (VolatilePrefix).
func IsVolatile(key string) bool { return strings.HasPrefix(key, VolatilePrefix) }

// WithChanges attaches field-level differences.
func WithChanges(changes []Change) Option { return func(e *Event) { e.Changes = changes } }

// Eventf records an event about obj. The message must hold no secret value.
func (r *Recorder) Eventf(obj client.Object, severity Severity, reason, messageFmt string, args ...any) {
	r.Record(obj, severity, reason, sprintf(messageFmt, args...))
}

// Record records an event about obj with the given options. A message
// longer than message.MaxBytes is cut to it, with a marker, in the stream
// event; the Kubernetes Event's is cut the same way to KubeNoteMaxBytes.
func (r *Recorder) Record(obj client.Object, severity Severity, reason, msg string, opts ...Option) {
	e := r.build(obj, severity, reason, msg, opts...)
	if r.kube != nil {
		eventType := corev1.EventTypeNormal
		if severity == SeverityError {
			eventType = corev1.EventTypeWarning
		}
		annotations := map[string]string{}
		if e.Revision != "" {
			annotations["plumb.dev/revision"] = e.Revision
		}
		r.kube.AnnotatedEventf(obj, nil, annotations, eventType, reason, KubeAction, "%s", message.TruncateTo(msg, KubeNoteMaxBytes))
	}
	r.publisher.Publish(e)
}

// RecordOnStream records an info event on the stream only, with no
// Kubernetes Event: news that machines read (alerts, commit statuses, the
// UI's timeline, `plumb events`) and that the object's status already
// tells a person at `kubectl describe`, so that a POST to the API server
// for it would cost every sync and tell no one anything new. Which news
// that is, and why, is in docs/design/events.md (render-controller's
// Rendered). There is no severity to pass: a failure always goes through
// Record, and so onto the object as a Warning Event.
func (r *Recorder) RecordOnStream(obj client.Object, reason, msg string, opts ...Option) {
	r.publisher.Publish(r.build(obj, SeverityInfo, reason, msg, opts...))
}

// build makes the stream event, its message cut to message.MaxBytes: the one
// place every event message of every controller passes.
func (r *Recorder) build(obj client.Object, severity Severity, reason, msg string, opts ...Option) Event {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() && r.scheme != nil {
		if found, err := apiutil.GVKForObject(obj, r.scheme); err == nil {
			gvk = found
		}
	}
	e := Event{
		SchemaVersion: SchemaVersion,
		ID:            NewID(),
		InvolvedObject: ObjectReference{
			APIVersion: apiVersion(gvk),
			Kind:       gvk.Kind,
			Namespace:  obj.GetNamespace(),
			Name:       obj.GetName(),
			UID:        string(obj.GetUID()),
		},
		Severity:            severity,
		Reason:              reason,
		Message:             message.Truncate(msg),
		Timestamp:           time.Now().UTC(),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
	}
	for _, o := range opts {
		o(&e)
	}
	withAnnotations(&e, obj.GetAnnotations())
	return e
}

// AnnotationPrefix starts the annotations of an object that travel in
// the metadata of its events under their full key (Flux's
// event.toolkit.fluxcd.io/, so a Flux object ports as it is): the object's
// owner adds details to its alerts, such as the pull request of a
// preview (ChangeRequestKey). notification-controller sends them without
// the prefix, below the Alert's eventMetadata and the controller's own keys.
const AnnotationPrefix = "event.toolkit.fluxcd.io/"

// ChangeRequestKey is the metadata key, after AnnotationPrefix, of the
// pull or merge request number an object's events are about, which the
// change request comment providers comment on.
const ChangeRequestKey = "change_request"

// withAnnotations copies the object's AnnotationPrefix annotations into
// the event's metadata; a key the controller set is kept.
func withAnnotations(e *Event, annotations map[string]string) {
	for k, v := range annotations {
		if !strings.HasPrefix(k, AnnotationPrefix) || len(k) == len(AnnotationPrefix) {
			continue
		}
		if _, set := e.Metadata[k]; set {
			continue
		}
		if e.Metadata == nil {
			e.Metadata = map[string]string{}
		}
		e.Metadata[k] = v
	}
}

func apiVersion(gvk schema.GroupVersionKind) string {
	if gvk.Empty() {
		return ""
	}
	return gvk.GroupVersion().String()
}

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}
