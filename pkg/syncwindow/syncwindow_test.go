package syncwindow

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func win(kind kustomizev1.SyncWindowKind, schedule, duration, zone string) kustomizev1.SyncWindow {
	d, err := time.ParseDuration(duration)
	if err != nil {
		panic(err)
	}
	return kustomizev1.SyncWindow{Kind: kind, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

const (
	allow = kustomizev1.SyncWindowAllow
	deny  = kustomizev1.SyncWindowDeny
)

// The windows' rules and their next opening, at instants chosen on each
// side of a window's edges, in UTC and in zones that change to daylight
// saving time.
func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		windows  []kustomizev1.SyncWindow
		now      string
		open     bool
		closing  []string
		nextOpen string // RFC 3339; empty when open, or when none is found
	}{
		{name: "no windows: open", now: "2026-12-07T10:00:00Z", open: true},
		{
			name:    "a deny window active: closed until it ends",
			windows: []kustomizev1.SyncWindow{win(deny, "0 22 * * *", "8h", "")},
			now:     "2026-12-07T23:00:00Z", closing: []string{"w[0]"}, nextOpen: "2026-12-08T06:00:00Z",
		},
		{
			name:    "a deny window before it starts: open",
			windows: []kustomizev1.SyncWindow{win(deny, "0 22 * * *", "8h", "")},
			now:     "2026-12-07T21:59:59Z", open: true,
		},
		{
			name:    "a deny window at its start: closed",
			windows: []kustomizev1.SyncWindow{win(deny, "0 22 * * *", "8h", "")},
			now:     "2026-12-07T22:00:00Z", closing: []string{"w[0]"}, nextOpen: "2026-12-08T06:00:00Z",
		},
		{
			name:    "a deny window at its end: open",
			windows: []kustomizev1.SyncWindow{win(deny, "0 22 * * *", "8h", "")},
			now:     "2026-12-08T06:00:00Z", open: true,
		},
		{
			name:    "an allow window on weekdays, on a Saturday: closed until Monday",
			windows: []kustomizev1.SyncWindow{win(allow, "0 9 * * 1-5", "8h", "")},
			now:     "2026-12-05T10:00:00Z", closing: []string{"w[0]"}, nextOpen: "2026-12-07T09:00:00Z",
		},
		{
			name:    "an allow window active: open",
			windows: []kustomizev1.SyncWindow{win(allow, "0 9 * * 1-5", "8h", "")},
			now:     "2026-12-07T16:59:00Z", open: true,
		},
		{
			name: "deny wins over an active allow, and the allow still holds when the deny ends",
			windows: []kustomizev1.SyncWindow{
				win(allow, "0 9 * * *", "8h", ""),
				win(deny, "0 12 * * *", "1h", ""),
			},
			now: "2026-12-07T12:30:00Z", closing: []string{"w[1]"}, nextOpen: "2026-12-07T13:00:00Z",
		},
		{
			name: "a deny that ends after the allow: closed until the next allow",
			windows: []kustomizev1.SyncWindow{
				win(allow, "0 9 * * *", "8h", ""),
				win(deny, "0 16 * * *", "2h", ""),
			},
			now: "2026-12-07T16:30:00Z", closing: []string{"w[1]"}, nextOpen: "2026-12-08T09:00:00Z",
		},
		{
			name: "overlapping deny windows: open only when both have ended",
			windows: []kustomizev1.SyncWindow{
				win(deny, "0 22 * * *", "4h", ""),
				win(deny, "0 1 * * *", "6h", ""),
			},
			now: "2026-12-07T23:00:00Z", closing: []string{"w[0]"}, nextOpen: "2026-12-08T07:00:00Z",
		},
		{
			name: "two allow windows, neither active: the earlier one opens",
			windows: []kustomizev1.SyncWindow{
				win(allow, "0 20 * * *", "1h", ""),
				win(allow, "0 6 * * *", "1h", ""),
			},
			now: "2026-12-07T21:30:00Z", closing: []string{"w[0]", "w[1]"}, nextOpen: "2026-12-08T06:00:00Z",
		},
		{
			name:    "a window longer than its period stays active across starts",
			windows: []kustomizev1.SyncWindow{win(deny, "0 * * * *", "90m", "")},
			now:     "2026-12-07T10:10:00Z", closing: []string{"w[0]"}, nextOpen: "",
		},
		{
			name:    "a time zone: 09:00 in Berlin is 08:00 UTC in winter",
			windows: []kustomizev1.SyncWindow{win(deny, "0 9 * * *", "2h", "Europe/Berlin")},
			now:     "2026-12-07T08:30:00Z", closing: []string{"w[0]"}, nextOpen: "2026-12-07T10:00:00Z",
		},
		{
			name:    "a time zone: before 09:00 in Berlin",
			windows: []kustomizev1.SyncWindow{win(deny, "0 9 * * *", "2h", "Europe/Berlin")},
			now:     "2026-12-07T07:30:00Z", open: true,
		},
		{
			name:    "daylight saving: 09:00 in Berlin is 07:00 UTC the day after the change",
			windows: []kustomizev1.SyncWindow{win(deny, "0 9 * * *", "1h", "Europe/Berlin")},
			now:     "2026-03-30T07:30:00Z", closing: []string{"w[0]"}, nextOpen: "2026-03-30T08:00:00Z",
		},
		{
			name:    "daylight saving: the day before the change, 07:30 UTC is still before 09:00 in Berlin",
			windows: []kustomizev1.SyncWindow{win(deny, "0 9 * * *", "1h", "Europe/Berlin")},
			now:     "2026-03-28T07:30:00Z", open: true,
		},
		{
			name: "daylight saving: a window across the change lasts its duration in real time",
			// 01:00 CET is 00:00 UTC; three hours later is 03:00 UTC, 05:00 CEST.
			windows: []kustomizev1.SyncWindow{win(deny, "0 1 * * *", "3h", "Europe/Berlin")},
			now:     "2026-03-29T02:30:00Z", closing: []string{"w[0]"}, nextOpen: "2026-03-29T03:00:00Z",
		},
		{
			name:    "daylight saving in New York: an allow window at 09:00 EDT",
			windows: []kustomizev1.SyncWindow{win(allow, "0 9 * * *", "1h", "America/New_York")},
			// 2026-03-08 is the change; 09:00 EDT on the 9th is 13:00 UTC.
			now: "2026-03-09T12:30:00Z", closing: []string{"w[0]"}, nextOpen: "2026-03-09T13:00:00Z",
		},
		{
			name:    "an allow window that never fires: closed, no opening found",
			windows: []kustomizev1.SyncWindow{win(allow, "0 0 30 2 *", "1h", "")},
			now:     "2026-12-07T10:00:00Z", closing: []string{"w[0]"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := ParseAll("w", tc.windows)
			if err != nil {
				t.Fatal(err)
			}
			st := Evaluate(ws, at(tc.now))
			if st.Open != tc.open {
				t.Fatalf("Open = %v, want %v (closing %v)", st.Open, tc.open, st.Names())
			}
			if got, want := strings.Join(st.Names(), ","), strings.Join(tc.closing, ","); got != want {
				t.Errorf("closing = %s, want %s", got, want)
			}
			var want time.Time
			if tc.nextOpen != "" {
				want = at(tc.nextOpen)
			}
			if !st.NextOpen.Equal(want) {
				t.Errorf("NextOpen = %s, want %s", st.NextOpen.UTC().Format(time.RFC3339), tc.nextOpen)
			}
		})
	}
}

// The next opening of a window that stays active for ever (every hour for
// 90 minutes) is not found, and the search stops at its bound instead of
// running for a year of steps.
func TestNextOpenOfAWindowThatNeverEnds(t *testing.T) {
	ws, err := ParseAll("w", []kustomizev1.SyncWindow{win(deny, "* * * * *", "2m", "")})
	if err != nil {
		t.Fatal(err)
	}
	if st := Evaluate(ws, at("2026-12-07T10:00:30Z")); st.Open || !st.NextOpen.IsZero() {
		t.Fatalf("Evaluate = open %v, next %s; want closed with no opening", st.Open, st.NextOpen)
	}
}

func TestManualSyncAndDriftCorrection(t *testing.T) {
	off := false
	manual := func(w kustomizev1.SyncWindow, m bool) kustomizev1.SyncWindow { w.ManualSync = m; return w }
	noDrift := func(w kustomizev1.SyncWindow) kustomizev1.SyncWindow { w.DriftCorrection = &off; return w }
	now := at("2026-12-07T12:30:00Z")
	for _, tc := range []struct {
		name          string
		windows       []kustomizev1.SyncWindow
		manual, drift bool
	}{
		{name: "open", windows: []kustomizev1.SyncWindow{win(allow, "0 12 * * *", "1h", "")}, manual: true, drift: true},
		{name: "one active deny with manualSync", windows: []kustomizev1.SyncWindow{manual(win(deny, "0 12 * * *", "1h", ""), true)}, manual: true, drift: true},
		{name: "one active deny without manualSync", windows: []kustomizev1.SyncWindow{win(deny, "0 12 * * *", "1h", "")}, drift: true},
		{
			name: "two active denies, one without manualSync",
			windows: []kustomizev1.SyncWindow{
				manual(win(deny, "0 12 * * *", "1h", ""), true),
				win(deny, "0 11 * * *", "2h", ""),
			},
			drift: true,
		},
		{
			name: "an inactive deny without manualSync does not count",
			windows: []kustomizev1.SyncWindow{
				manual(win(deny, "0 12 * * *", "1h", ""), true),
				win(deny, "0 1 * * *", "1h", ""),
			},
			manual: true, drift: true,
		},
		{name: "inactive allow with manualSync", windows: []kustomizev1.SyncWindow{manual(win(allow, "0 1 * * *", "1h", ""), true)}, manual: true, drift: true},
		{name: "an active deny stops drift correction", windows: []kustomizev1.SyncWindow{noDrift(win(deny, "0 12 * * *", "1h", ""))}},
		{name: "an inactive deny does not stop drift correction", windows: []kustomizev1.SyncWindow{noDrift(win(deny, "0 1 * * *", "1h", ""))}, manual: true, drift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := ParseAll("w", tc.windows)
			if err != nil {
				t.Fatal(err)
			}
			st := Evaluate(ws, now)
			if got := st.ManualSyncAllowed(); got != tc.manual {
				t.Errorf("ManualSyncAllowed() = %v, want %v", got, tc.manual)
			}
			if got := st.DriftCorrection(); got != tc.drift {
				t.Errorf("DriftCorrection() = %v, want %v", got, tc.drift)
			}
		})
	}
}

func TestParseRefusesWithTheFieldAndWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    kustomizev1.SyncWindow
		want string
	}{
		{"six fields", win(deny, "0 0 22 * * *", "1h", ""), `w[0]: schedule "0 0 22 * * *" is not a cron expression of five fields`},
		{"a bad field", win(deny, "61 22 * * *", "1h", ""), `w[0]: schedule "61 22 * * *" is not a cron expression`},
		{"an unknown zone", win(deny, "0 22 * * *", "1h", "Mars/Olympus"), `w[0]: timeZone "Mars/Olympus" is not an IANA time zone`},
		{"a zone in the schedule", win(deny, "CRON_TZ=UTC 0 22 * * *", "1h", ""), `give the time zone in timeZone`},
		{"no duration", win(deny, "0 22 * * *", "0s", ""), `w[0]: duration 0s must be greater than zero`},
		{"a kind", win("maybe", "0 22 * * *", "1h", ""), `w[0]: kind "maybe" is neither allow nor deny`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAll("w", []kustomizev1.SyncWindow{tc.w})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
