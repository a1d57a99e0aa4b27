package controller

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/message"
)

// A 40 KB regular expression that does not compile: the regexp error quotes
// it whole, more than the API server takes in a condition message. The
// status patch cuts Ready's and Stalled's messages to message.MaxBytes, so
// the Alert still says what is wrong.
func TestAHugeInvalidSpecIsReportedBounded(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	alert := createAlert(t, ns, "huge", "nowhere", func(s *notificationv1.AlertSpec) {
		s.InclusionList = []string{"(" + strings.Repeat("a", 40_000)}
	})

	ready := waitReady(t, alert, metav1.ConditionFalse)
	g.Expect(ready.Reason).To(Equal(meta.InvalidSpecReason))
	stalled := conditions.Get(alert, meta.StalledCondition)
	g.Expect(stalled).NotTo(BeNil())
	for _, msg := range []string{ready.Message, stalled.Message} {
		g.Expect(len(msg)).To(BeNumerically("<=", message.MaxBytes))
		g.Expect(msg).To(HavePrefix("spec.inclusionList[0]: error parsing regexp: missing closing ): `(aaa"))
		g.Expect(msg).To(MatchRegexp(`a… \([0-9,]+ more bytes\)$`))
	}
}
