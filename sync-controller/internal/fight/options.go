package fight

import (
	"time"

	"github.com/spf13/pflag"
)

// Options set fight detection.
type Options struct {
	// Window: a foreign manager that rewrites the fields sync-controller
	// reverted, within Window of the revert, is fighting
	// (--drift-fight-window); zero turns fight detection off, and every
	// drift is reverted at once, however often it comes back.
	Window time.Duration
	// FirstBackoff is the first hold of a contested correction; each next
	// one is ten times longer, up to the Kustomization's interval.
	FirstBackoff time.Duration
}

// defaultFirstBackoff is the first hold when FirstBackoff is unset.
const defaultFirstBackoff = 100 * time.Millisecond

// BindFlags binds --drift-fight-window and --drift-fight-backoff.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Window, "drift-fight-window", 30*time.Second,
		"A foreign field manager that rewrites fields within this long of their correction is fighting: further corrections of that object back off (0 turns fight detection off). The default catches a HorizontalPodAutoscaler's 15 s sync period.")
	fs.DurationVar(&o.FirstBackoff, "drift-fight-backoff", defaultFirstBackoff,
		"The first hold of a contested correction; each next one is ten times longer, up to the Kustomization's interval.")
}
