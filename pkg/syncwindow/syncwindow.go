package syncwindow

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	// Time zones without the host's zoneinfo: the controllers' images
	// have none.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Horizon is how far ahead Evaluate looks for the windows to open.
const Horizon = 366 * 24 * time.Hour

// maxSteps bounds the search for the next opening: each step is one start
// or end of a window; a window every minute for a year would be half a
// million, so the search stops early and says it found no opening.
const maxSteps = 20000

// Window is a sync window, parsed, with the name it is reported by
// (spec.syncWindows[0], SyncWindowPolicy/maintenance[1]).
type Window struct {
	Name            string
	Kind            kustomizev1.SyncWindowKind
	Duration        time.Duration
	ManualSync      bool
	DriftCorrection bool
	schedule        cron.Schedule
}

// parser reads the five standard cron fields; Argo CD's windows take the
// same.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Parse reads a window of the API, named name in messages. The error says
// which field is wrong and why.
func Parse(name string, w kustomizev1.SyncWindow) (Window, error) {
	out := Window{Name: name, Kind: w.Kind, Duration: w.Duration.Duration, ManualSync: w.ManualSync,
		DriftCorrection: w.DriftCorrection == nil || *w.DriftCorrection}
	if w.Kind != kustomizev1.SyncWindowAllow && w.Kind != kustomizev1.SyncWindowDeny {
		return Window{}, fmt.Errorf("%s: kind %q is neither allow nor deny", name, w.Kind)
	}
	if out.Duration <= 0 {
		return Window{}, fmt.Errorf("%s: duration %s must be greater than zero", name, out.Duration)
	}
	if strings.HasPrefix(strings.TrimSpace(w.Schedule), "CRON_TZ=") || strings.HasPrefix(strings.TrimSpace(w.Schedule), "TZ=") {
		return Window{}, fmt.Errorf("%s: schedule %q: give the time zone in timeZone, not in the schedule", name, w.Schedule)
	}
	loc := time.UTC
	if w.TimeZone != "" {
		l, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			return Window{}, fmt.Errorf("%s: timeZone %q is not an IANA time zone", name, w.TimeZone)
		}
		loc = l
	}
	sched, err := parser.Parse(w.Schedule)
	if err != nil {
		return Window{}, fmt.Errorf("%s: schedule %q is not a cron expression of five fields: %w", name, w.Schedule, err)
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	out.schedule = sched
	return out, nil
}

// ParseAll parses the windows of one list, named prefix[i].
func ParseAll(prefix string, ws []kustomizev1.SyncWindow) ([]Window, error) {
	out := make([]Window, 0, len(ws))
	var errs []error
	for i, w := range ws {
		p, err := Parse(fmt.Sprintf("%s[%d]", prefix, i), w)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// activeAt says whether the window is active at t: a start s of its
// schedule with s <= t < s+duration.
func (w Window) activeAt(t time.Time) bool {
	// The first start after t-duration is the latest that can still cover
	// t; cron's Next is strictly after its argument.
	s := w.schedule.Next(t.Add(-w.Duration))
	return !s.IsZero() && !s.After(t)
}

// State is what the windows say at one instant.
type State struct {
	// Open: a new revision may be applied now.
	Open bool
	// Closing are the windows that keep syncs out while closed: the
	// active deny windows, or, when none is, the allow windows (none of
	// which is active).
	Closing []Window
	// NextOpen is when the windows open next, zero when open now or when
	// no opening was found within Horizon.
	NextOpen time.Time
}

// Evaluate returns the state of the windows at now.
func Evaluate(windows []Window, now time.Time) State {
	open, closing := decide(windows, now)
	st := State{Open: open, Closing: closing}
	if !open {
		st.NextOpen = nextOpen(windows, now)
	}
	return st
}

// decide applies Argo CD's rules at t: a deny window active closes; else
// an allow window active opens; else allow windows close; no window opens.
func decide(windows []Window, t time.Time) (bool, []Window) {
	var deny, allows []Window
	allowActive := false
	for _, w := range windows {
		switch {
		case w.Kind == kustomizev1.SyncWindowDeny && w.activeAt(t):
			deny = append(deny, w)
		case w.Kind == kustomizev1.SyncWindowAllow:
			allows = append(allows, w)
			allowActive = allowActive || w.activeAt(t)
		}
	}
	switch {
	case len(deny) > 0:
		return false, deny
	case allowActive || len(allows) == 0:
		return true, nil
	}
	return false, allows
}

// nextOpen is the earliest instant after now at which decide opens, found
// among the windows' starts and ends (the only instants where the answer
// can change), up to Horizon; zero when none.
func nextOpen(windows []Window, now time.Time) time.Time {
	if len(windows) == 0 {
		return now
	}
	limit := now.Add(Horizon)
	t := now
	for range maxSteps {
		var candidates []time.Time
		for _, w := range windows {
			// The next start after t, and the end of the window active at
			// t (or starting right now), whichever come first.
			if s := w.schedule.Next(t); !s.IsZero() {
				candidates = append(candidates, s)
			}
			if s := w.schedule.Next(t.Add(-w.Duration)); !s.IsZero() && !s.After(t) {
				candidates = append(candidates, s.Add(w.Duration))
			}
		}
		if len(candidates) == 0 {
			return time.Time{}
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Before(candidates[j]) })
		t = candidates[0]
		if t.After(limit) {
			return time.Time{}
		}
		if open, _ := decide(windows, t); open {
			return t
		}
	}
	return time.Time{}
}

// ManualSyncAllowed says whether a manual sync may go through now: always
// when open; when closed, if every window that keeps syncs out has
// manualSync, as Argo CD lets a manual sync through a deny window only
// when all the active ones allow it.
func (s State) ManualSyncAllowed() bool {
	if s.Open {
		return true
	}
	for _, w := range s.Closing {
		if !w.ManualSync {
			return false
		}
	}
	return len(s.Closing) > 0
}

// DriftCorrection says whether drift is still corrected: always when open;
// when closed, unless a window that keeps syncs out says driftCorrection:
// false.
func (s State) DriftCorrection() bool {
	for _, w := range s.Closing {
		if !w.DriftCorrection {
			return false
		}
	}
	return true
}

// Names are the names of the windows that keep syncs out.
func (s State) Names() []string {
	out := make([]string, len(s.Closing))
	for i, w := range s.Closing {
		out[i] = w.Name
	}
	return out
}
