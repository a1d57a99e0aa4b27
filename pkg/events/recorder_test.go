package events

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/message"
)

type published []Event

func (p *published) Publish(e Event) { *p = append(*p, e) }

// Every event message is cut, with the marker, to message.MaxBytes in the
// stream event and to KubeNoteMaxBytes in the Kubernetes Event, whichever
// method records it; a message that fits passes as it is.
func TestRecorderBoundsEveryMessage(t *testing.T) {
	long := "kustomize build failed: " + strings.Repeat("p", 80_000)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}}
	for _, tt := range []struct {
		name   string
		record func(r *Recorder)
		want   func(g Gomega, msg string)
		full   string // the message before any cut
	}{
		{
			name: "Record",
			record: func(r *Recorder) {
				r.Record(obj, SeverityError, kustomizev1.BuildFailedReason, long, WithRevision("main@sha1:abc"))
			},
			want: func(g Gomega, msg string) {
				g.Expect(len(msg)).To(BeNumerically("<=", message.MaxBytes))
				g.Expect(msg).To(HavePrefix("kustomize build failed: ppp"))
				g.Expect(msg).To(MatchRegexp(`p… \(75,\d{3} more bytes\)$`))
			},
			full: long,
		},
		{
			name:   "Eventf",
			record: func(r *Recorder) { r.Eventf(obj, SeverityError, kustomizev1.BuildFailedReason, "render: %s", long) },
			want: func(g Gomega, msg string) {
				g.Expect(len(msg)).To(BeNumerically("<=", message.MaxBytes))
				g.Expect(msg).To(HavePrefix("render: kustomize build failed: ppp"))
				g.Expect(msg).To(MatchRegexp(`p… \(75,\d{3} more bytes\)$`))
			},
			full: "render: " + long,
		},
		{
			name:   "a message that fits",
			record: func(r *Recorder) { r.Record(obj, SeverityInfo, kustomizev1.RenderedReason, "rendered 3 objects") },
			want:   func(g Gomega, msg string) { g.Expect(msg).To(Equal("rendered 3 objects")) },
			full:   "rendered 3 objects",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kube := kevents.NewFakeRecorder(1)
			var stream published
			tt.record(NewRecorder(kube, &stream, nil, "test"))

			g.Expect(stream).To(HaveLen(1))
			tt.want(g, stream[0].Message)
			var kubeEvent string
			g.Expect(kube.Events).To(Receive(&kubeEvent))
			_, kubeMsg, _ := strings.Cut(kubeEvent, stream[0].Reason+" ")
			g.Expect(len(kubeMsg)).To(BeNumerically("<=", KubeNoteMaxBytes))
			g.Expect(kubeMsg).To(Equal(message.TruncateTo(tt.full, KubeNoteMaxBytes)), "the Kubernetes Event says the same, cut shorter")
		})
	}
}

// An object's event.toolkit.fluxcd.io/ annotations travel in the metadata
// of its events under their full key, as Flux's do (the change request a
// comment provider comments on among them); a key the controller set is
// kept, and other annotations stay out.
func TestEventsCarryTheObjectsEventAnnotations(t *testing.T) {
	g := NewWithT(t)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "preview", Annotations: map[string]string{
		AnnotationPrefix + ChangeRequestKey: "42",
		AnnotationPrefix + "deploymentID":   "e076e315",
		AnnotationPrefix + "owner":          "from the annotation",
		AnnotationPrefix:                    "no key",
		"kustomize.toolkit.fluxcd.io/prune": "disabled",
	}}}
	var stream published
	NewRecorder(nil, &stream, nil, "test").Record(obj, SeverityInfo, "Applied", "applied",
		WithMetadata(map[string]string{AnnotationPrefix + "owner": "from the controller", "objects": "3"}))
	g.Expect(stream).To(HaveLen(1))
	g.Expect(stream[0].Metadata).To(Equal(map[string]string{
		"event.toolkit.fluxcd.io/change_request": "42",
		"event.toolkit.fluxcd.io/deploymentID":   "e076e315",
		"event.toolkit.fluxcd.io/owner":          "from the controller",
		"objects":                                "3",
	}))
}

// RecordOnStream publishes an info event, bounded and carrying its options
// and the object's event annotations as Record's do, and writes no
// Kubernetes Event; Record, beside it, writes both.
func TestRecordOnStreamWritesNoKubernetesEvent(t *testing.T) {
	g := NewWithT(t)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app",
		Annotations: map[string]string{AnnotationPrefix + ChangeRequestKey: "7"}}}
	kube := kevents.NewFakeRecorder(2)
	var stream published
	r := NewRecorder(kube, &stream, nil, "test")

	r.RecordOnStream(obj, kustomizev1.RenderedReason, "rendered 4 objects from revision \"main@sha1:abc\" "+strings.Repeat("x", 2*message.MaxBytes),
		WithRevision("main@sha1:abc"), WithMetadata(map[string]string{"digest": "sha256:01"}))
	g.Expect(stream).To(HaveLen(1))
	e := stream[0]
	g.Expect(e.Severity).To(Equal(SeverityInfo))
	g.Expect(e.Reason).To(Equal(kustomizev1.RenderedReason))
	g.Expect(e.Revision).To(Equal("main@sha1:abc"))
	g.Expect(e.Metadata).To(Equal(map[string]string{"digest": "sha256:01", AnnotationPrefix + ChangeRequestKey: "7"}))
	g.Expect(len(e.Message)).To(BeNumerically("<=", message.MaxBytes))
	g.Expect(e.ReportingController).To(Equal("test"))
	g.Expect(kube.Events).NotTo(Receive(), "no Kubernetes Event")

	r.Record(obj, SeverityError, kustomizev1.BuildFailedReason, "kustomize build failed")
	g.Expect(stream).To(HaveLen(2))
	var kubeEvent string
	g.Expect(kube.Events).To(Receive(&kubeEvent))
	g.Expect(kubeEvent).To(HavePrefix("Warning " + kustomizev1.BuildFailedReason + " "))
}
