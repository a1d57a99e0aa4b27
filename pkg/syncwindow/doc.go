// Package syncwindow decides whether a Kustomization or a HelmRelease may
// apply a new revision now, from its sync windows, as Argo CD decides for
// an Application from its project's windows:
//
//   - no window at all: always open;
//   - a deny window active: closed, whatever allow windows say;
//   - allow windows, none of them active: closed;
//   - otherwise open.
//
// A window is active from each time its cron schedule fires (five fields,
// read in its time zone, github.com/robfig/cron/v3) for its duration.
// Evaluate also says when the windows open next (the earliest time at
// which the rules above give open, searched over the windows' starts and
// ends up to a year ahead), whether a manual sync may go through while
// closed (every active deny window, or every allow window when none is
// active, has manualSync), and whether drift is still corrected (no
// window that keeps syncs out says driftCorrection: false).
//
// Everything takes the time as an argument: there is no clock here, so
// tests give any instant, in any zone, across daylight-saving changes.
// Time zones come from the embedded tzdata (time/tzdata), so a controller
// image without /usr/share/zoneinfo reads them alike.
package syncwindow
