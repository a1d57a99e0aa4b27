package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/git"
)

// The source step's failures, by what went wrong: the reason Ready and
// FetchFailed report, and whether retrying can help.
func TestFetchFailureSaysWhetherRetryingHelps(t *testing.T) {
	cause := errors.New("boom")
	for _, tt := range []struct {
		kind    git.Kind
		reason  string
		policy  plumbreconcile.Policy
		polling bool
	}{
		{git.AuthFailed, sourcev1.AuthenticationFailedReason, plumbreconcile.Retry, false},
		{git.NotFound, sourcev1.ReferenceNotFoundReason, plumbreconcile.Retry, false},
		{git.Failed, sourcev1.GitOperationFailedReason, plumbreconcile.Retry, false},
		{git.InvalidSpec, meta.InvalidSpecReason, plumbreconcile.Stall, false},
		{git.TooLarge, sourcev1.RepositoryTooLargeReason, plumbreconcile.Stall, true},
		{git.Insecure, meta.InsecureConnectionsDisallowedReason, plumbreconcile.Stall, true},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			err := fmt.Errorf("fetching: %w", &git.Error{Kind: tt.kind, Err: cause})
			f := fetchFailure(err, time.Minute)
			g.Expect(f.Reason).To(Equal(tt.reason))
			g.Expect(f.Policy).To(Equal(tt.policy))
			g.Expect(f.Err).To(MatchError(cause))
			if tt.polling {
				g.Expect(f.RequeueAfter).To(Equal(time.Minute))
			} else {
				g.Expect(f.RequeueAfter).To(BeZero())
			}
		})
	}
	// An error from outside internal/git (reading the Secret) is a
	// retried Git operation failure.
	g := NewWithT(t)
	f := fetchFailure(errors.New("connection reset"), time.Minute)
	g.Expect(f.Reason).To(Equal(sourcev1.GitOperationFailedReason))
	g.Expect(f.Policy).To(Equal(plumbreconcile.Retry))
}
