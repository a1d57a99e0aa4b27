package notifier

import (
	"testing"

	. "github.com/onsi/gomega"

	notificationv1 "plumb.dev/api/notification/v1"
)

// TestANATSProviderCannotPublishIntoPlumbOrNATSSubjects: a Provider's
// channel may not name Plumb's event stream, NATS's JetStream API or
// system subjects, or reply inboxes, whatever server it points at.
func TestANATSProviderCannotPublishIntoPlumbOrNATSSubjects(t *testing.T) {
	for subject, refused := range map[string]string{
		"plumb.events.kustomization.team-b.app": "Plumb's own",
		"plumb.alerts":                          "Plumb's own",
		"$JS.API.STREAM.DELETE.PLUMB_EVENTS":    "JetStream API",
		"$SYS.REQ.SERVER.PING":                  "system",
		"$KV.config.x":                          "system",
		"_INBOX.notification.abc":               "reply subjects",
		"alerts.*":                              "wildcard",
		"alerts.>":                              "wildcard",
		"alerts..team-a":                        "empty token",
		"alerts.team a":                         "white space",
		"alerts.team-a.drift":                   "",
		"deployments":                           "",
		"plumbing.alerts":                       "",
	} {
		t.Run(subject, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(Config{Type: notificationv1.NATSProvider, Address: "nats://nats.example:4222", Channel: subject})
			if refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(refused)))
		})
	}
}
