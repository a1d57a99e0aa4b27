package typedwatch_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/typedwatch"
)

// fleetEvent is the JSON of a MODIFIED event of a fleet's Kustomization
// after its status writes: spec, both controllers' conditions, the
// rendered artifact and two field managers' field sets.
func fleetEvent(b *testing.B) []byte {
	now := metav1.NewTime(time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC))
	k := newKustomization("fleet-0042", "app-0042")
	k.APIVersion, k.Kind = kustomizev1.GroupVersion.String(), "Kustomization"
	k.UID, k.ResourceVersion, k.Generation, k.CreationTimestamp = "4b8f8d0e-7d0c-4c37-9d5e-0d1e2f3a4b5c", "123456", 1, now
	fields := `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:lastAppliedRevision":{},"f:observedGeneration":{}}}`
	for _, m := range []string{"sync-controller", "render-controller"} {
		k.ManagedFields = append(k.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "kustomize.plumb.dev/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields), Subresource: "status"})
	}
	size := int64(2048)
	k.Status.ObservedGeneration = 1
	k.Status.LastAppliedRevision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
	k.Status.LastAttemptedRevision = k.Status.LastAppliedRevision
	k.Status.RenderedArtifact = &meta.Artifact{Path: "kustomization/fleet-0042/app-0042/0123.yaml", URL: "http://render-controller.plumb-system.svc/kustomization/fleet-0042/app-0042/0123.yaml",
		Revision: k.Status.LastAppliedRevision, Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Size: &size, LastUpdateTime: now}
	for _, c := range []string{"Ready", "Healthy", "Rendered", "Reconciling"} {
		k.Status.Conditions = append(k.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, ObservedGeneration: 1,
			LastTransitionTime: now, Reason: "ReconciliationSucceeded", Message: "Applied revision: " + k.Status.LastAppliedRevision})
	}
	frame, err := json.Marshal(map[string]any{"type": "MODIFIED", "object": k})
	if err != nil {
		b.Fatal(err)
	}
	return append(frame, '\n')
}

// BenchmarkDecodeAWatchEvent decodes a fleet Kustomization's watch event
// as rest.Request.Watch does, with client-go's negotiator and with this
// package.s: one op is a stream of 100 events.
func BenchmarkDecodeAWatchEvent(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := kinds.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	ours, err := typedwatch.NewClientNegotiator(scheme, kustomizationGVK)
	if err != nil {
		b.Fatal(err)
	}
	frame := fleetEvent(b)
	for _, n := range []struct {
		name       string
		negotiator runtime.ClientNegotiator
	}{{"client-go", clientGoNegotiator(scheme)}, {"one-pass", ours}} {
		b.Run(n.name, func(b *testing.B) {
			const perStream = 100
			stream := bytes.Repeat(frame, perStream)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				objects, events, framer, err := n.negotiator.StreamDecoder(runtime.ContentTypeJSON, nil)
				if err != nil {
					b.Fatal(err)
				}
				dec := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream))), events), objects)
				for range perStream {
					if _, _, err := dec.Decode(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
