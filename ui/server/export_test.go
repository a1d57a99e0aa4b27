package server

import (
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/kinds"
	"plumb.dev/ui/internal/workloads"
)

// AppliedChecker is the stream part's check of a drift change's object,
// for the tests.
type AppliedChecker interface {
	MayGetApplied(r *http.Request, kind, namespace, name string) bool
	// MayGet is the check of an event's involved object.
	MayGet(r *http.Request, kind, namespace, name string) bool
}

// NewStreamAccess is the stream part's Authorizer over a, discovering
// kinds with cfg.
func NewStreamAccess(a access.Access, cfg *rest.Config) (AppliedChecker, error) {
	d, err := kinds.NewDiscovered(cfg)
	if err != nil {
		return nil, err
	}
	return streamAccess{access: a, kinds: d}, nil
}

// SetMaxFollow sets how long a followed log stays open, until the test
// ends.
func SetMaxFollow(t interface{ Cleanup(func()) }, d time.Duration) {
	old := workloads.MaxFollow
	workloads.MaxFollow = d
	t.Cleanup(func() { workloads.MaxFollow = old })
}
