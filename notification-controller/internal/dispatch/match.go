package dispatch

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

// Matcher decides which Alerts want an event.
type Matcher struct {
	// NoCrossNamespaceRefs makes an event source outside the Alert's
	// namespace ("*" included) match nothing.
	NoCrossNamespaceRefs bool
}

// Match reports whether the alert wants the event: one of its eventSources
// names the involved object, the severity is at least the alert's, and the
// message passes the inclusion and exclusion lists. labels returns the
// involved object's labels; it is called only when a source has matchLabels.
// An invalid regular expression is an error (the Alert reconciler reports it
// on the Alert too).
func (m Matcher) Match(alert *notificationv1.Alert, e *events.Event, labels func() (map[string]string, error)) (bool, error) {
	if alert.Spec.Suspend {
		return false, nil
	}
	if alert.Spec.EventSeverity == string(events.SeverityError) && e.Severity != events.SeverityError {
		return false, nil
	}
	source := false
	for _, src := range alert.Spec.EventSources {
		if m.NoCrossNamespaceRefs && src.Namespace != "" && src.Namespace != alert.Namespace {
			continue
		}
		ok, err := matchSource(alert.Namespace, src, e, labels)
		if err != nil {
			return false, err
		}
		if ok {
			source = true
			break
		}
	}
	if !source {
		return false, nil
	}
	if len(alert.Spec.InclusionList) > 0 {
		included := false
		for _, expr := range alert.Spec.InclusionList {
			re, err := compile(expr)
			if err != nil {
				return false, err
			}
			if re.MatchString(e.Message) {
				included = true
				break
			}
		}
		if !included {
			return false, nil
		}
	}
	for _, expr := range alert.Spec.ExclusionList {
		re, err := compile(expr)
		if err != nil {
			return false, err
		}
		if re.MatchString(e.Message) {
			return false, nil
		}
	}
	return true, nil
}

func matchSource(alertNamespace string, src notificationv1.CrossNamespaceObjectReference, e *events.Event, labels func() (map[string]string, error)) (bool, error) {
	obj := e.InvolvedObject
	if !strings.EqualFold(src.Kind, obj.Kind) {
		return false, nil
	}
	if src.APIVersion != "" && obj.APIVersion != "" && src.APIVersion != obj.APIVersion {
		return false, nil
	}
	ns := src.Namespace
	if ns == "" {
		ns = alertNamespace
	}
	if ns != "*" && ns != obj.Namespace {
		return false, nil
	}
	if !src.MatchesName(obj.Name) {
		return false, nil
	}
	if len(src.MatchLabels) > 0 {
		have, err := labels()
		if err != nil {
			return false, fmt.Errorf("reading the labels of %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
		}
		for k, v := range src.MatchLabels {
			if got, ok := have[k]; !ok || got != v {
				return false, nil
			}
		}
	}
	return true, nil
}

var regexps sync.Map // string -> *regexp.Regexp

// compile returns the compiled expression, cached: alerts are matched
// against every event.
func compile(expr string) (*regexp.Regexp, error) {
	if re, ok := regexps.Load(expr); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %w", expr, err)
	}
	regexps.Store(expr, re)
	return re, nil
}

// ValidateAlert reports the first invalid regular expression of the alert's
// inclusion and exclusion lists.
func ValidateAlert(alert *notificationv1.Alert) error {
	for _, list := range []struct {
		name  string
		exprs []string
	}{{"inclusionList", alert.Spec.InclusionList}, {"exclusionList", alert.Spec.ExclusionList}} {
		for i, expr := range list.exprs {
			if _, err := regexp.Compile(expr); err != nil {
				return fmt.Errorf("spec.%s[%d]: %w", list.name, i, err)
			}
		}
	}
	return nil
}
