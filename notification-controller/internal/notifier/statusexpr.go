package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/celexpr"
	"plumb.dev/pkg/events"
)

// statusExprVars are the variables of spec.commitStatusExpr, Flux's.
var statusExprVars = []string{"event", "alert", "provider"}

// statusExpr is a Provider's spec.commitStatusExpr: a CEL expression that
// gives the commit status's context (GitHub's and Gitea's context,
// GitLab's name, Bitbucket's key, Azure DevOps' genre/name) in place of
// statusContext's, from the event, the Alert and the Provider.
type statusExpr struct {
	prog *celexpr.Program
	// provider is the Provider as a map, converted once.
	provider map[string]any
}

// newStatusExpr compiles cfg.CommitStatusExpr; New refuses the Provider
// with its error, so a Provider reconcile reports it.
func newStatusExpr(cfg Config) (*statusExpr, error) {
	prog, err := celexpr.Compile(cfg.CommitStatusExpr, celexpr.String, statusExprVars...)
	if err != nil {
		return nil, fmt.Errorf("spec.commitStatusExpr: %w", err)
	}
	provider := map[string]any{}
	if cfg.Provider != nil {
		if provider, err = runtime.DefaultUnstructuredConverter.ToUnstructured(cfg.Provider); err != nil {
			return nil, fmt.Errorf("spec.commitStatusExpr: the Provider as a map: %w", err)
		}
	}
	return &statusExpr{prog: prog, provider: provider}, nil
}

// context evaluates the expression for e, cut to maxContext as
// statusContext's is. A failure or an empty result is permanent: the same
// event and objects give the same result.
func (x *statusExpr) context(ctx context.Context, e events.Event) (string, error) {
	event, err := asMap(e)
	if err != nil {
		return "", &PermanentError{Err: fmt.Errorf("spec.commitStatusExpr: the event as a map: %w", err)}
	}
	alert := map[string]any{}
	if a := alertOf(ctx); a != nil {
		if alert, err = runtime.DefaultUnstructuredConverter.ToUnstructured(a); err != nil {
			return "", &PermanentError{Err: fmt.Errorf("spec.commitStatusExpr: the Alert as a map: %w", err)}
		}
	}
	id, err := x.prog.String(ctx, map[string]any{"event": event, "alert": alert, "provider": x.provider})
	if err != nil {
		return "", &PermanentError{Err: fmt.Errorf("spec.commitStatusExpr: %w", err)}
	}
	if id == "" {
		return "", &PermanentError{Err: errors.New("spec.commitStatusExpr gave an empty string, which names no commit status")}
	}
	return boundContext(id), nil
}

// asMap is the event as its JSON reads (involvedObject, metadata, ...).
func asMap(e events.Event) (map[string]any, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

type alertKey struct{}

// WithAlert returns ctx carrying the Alert a delivery is for: the
// dispatcher's, for the notifiers that read it (spec.commitStatusExpr's
// alert).
func WithAlert(ctx context.Context, a *notificationv1.Alert) context.Context {
	return context.WithValue(ctx, alertKey{}, a)
}

func alertOf(ctx context.Context) *notificationv1.Alert {
	a, _ := ctx.Value(alertKey{}).(*notificationv1.Alert)
	return a
}
