package notifier

import (
	"fmt"
	"strings"

	"plumb.dev/pkg/events"
)

// checkNATSSubject refuses a subject a nats Provider may not publish on:
// one of Plumb's or NATS's own, a wildcard, or a malformed subject. Deploy's NATS server refuses them too, by the
// permissions of the alerts user; this check holds for any server.
func checkNATSSubject(subject string) error {
	for _, token := range strings.Split(subject, ".") {
		switch {
		case token == "":
			return fmt.Errorf("the nats subject %q has an empty token", subject)
		case token == "*" || token == ">":
			return fmt.Errorf("the nats subject %q has a wildcard; a provider publishes on one subject", subject)
		case strings.ContainsAny(token, " \t\r\n"):
			return fmt.Errorf("the nats subject %q has white space", subject)
		}
	}
	// Plumb's own subjects (plumb.>, where plumb.events.> is the event
	// stream: a forged event there would become an alert in every tenant's
	// channel), NATS's system and JetStream API subjects ($SYS, $JS, $KV,
	// …) and reply inboxes.
	first, _, _ := strings.Cut(subject, ".")
	if first == "plumb" || first == "_INBOX" || strings.HasPrefix(first, "$") {
		return fmt.Errorf("a nats provider may not publish on %q: plumb.> is Plumb's own (%s.> its event stream), and $… and _INBOX… are NATS's system, JetStream API and reply subjects", subject, events.SubjectPrefix)
	}
	return nil
}
