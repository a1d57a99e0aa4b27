package events

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestFingerprint(t *testing.T) {
	g := NewWithT(t)
	a := &Event{SchemaVersion: SchemaVersion, ID: NewID(), InvolvedObject: ObjectReference{Kind: "GitRepository", Namespace: "apps", Name: "x"},
		Severity: SeverityInfo, Reason: "R", Message: "m", Timestamp: time.Now()}
	a.Metadata = map[string]string{"k": "v", "j": "w"}
	b := *a
	b.ID, b.Timestamp, b.ReportingInstance = "other", a.Timestamp.Add(time.Hour), "pod-2"
	b.Metadata = map[string]string{"j": "w", "k": "v"}
	g.Expect(Fingerprint(&b)).To(Equal(Fingerprint(a)), "ids, times and instances do not count")
	b.Metadata = map[string]string{"j": "w", "k": "v", VolatilePrefix + "detail": "2 of 3 replicas available"}
	g.Expect(Fingerprint(&b)).To(Equal(Fingerprint(a)), "volatile metadata does not count")
	for _, change := range []func(*Event){
		func(e *Event) { e.Message = "n" },
		func(e *Event) { e.Reason = "S" },
		func(e *Event) { e.Revision = "main@sha1:2" },
		func(e *Event) { e.Severity = SeverityError },
		func(e *Event) { e.InvolvedObject.Name = "y" },
		func(e *Event) { e.Metadata = map[string]string{"k": "v"} },
		func(e *Event) { e.Changes = []Change{{Object: "o", Path: "p"}} },
	} {
		c := *a
		change(&c)
		g.Expect(Fingerprint(&c)).NotTo(Equal(Fingerprint(a)))
	}
}
