package notifier

import "errors"

// Skipped is what Post returns for an event the provider has nothing to do
// with: a commit status provider given an event without a commit, or about
// a kind that syncs nothing. It is no failure: the dispatcher logs Why at
// info level and counts the event as handled (no retry, no DeliveryFailed
// event).
type Skipped struct{ Why string }

func (s *Skipped) Error() string { return "skipped: " + s.Why }

// IsSkipped reports whether err is a Skipped.
func IsSkipped(err error) bool {
	var s *Skipped
	return errors.As(err, &s)
}
