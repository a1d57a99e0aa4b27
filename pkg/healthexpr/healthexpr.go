package healthexpr

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
)

// Checks is a compiled spec.healthCheckExprs. The nil Checks judges every
// object by pkg/health alone.
type Checks struct {
	byKind map[schema.GroupKind]*check
	key    string
}

// check is one entry: its expressions in the order they are tried, or the
// error that keeps it from judging anything.
type check struct {
	name  string
	steps []step
	err   error
}

// step is one expression and the status it stands for when it holds.
type step struct {
	field  string
	status health.Status
	prog   *program
}

// Compile compiles the entries. The error joins what is wrong with each
// entry (an expression that does not parse, a second entry for a group and
// kind); the Checks it returns all the same judges the objects of a broken
// entry Unknown with that error, and the others by their expressions, so a
// view of the objects (plumb tree) still shows something true.
func Compile(entries []kustomizev1.CustomHealthCheck) (*Checks, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	c := &Checks{byKind: make(map[schema.GroupKind]*check, len(entries))}
	h := sha256.New()
	var errs []error
	for i, e := range entries {
		fmt.Fprintf(h, "%q %q %q %q %q\n", e.APIVersion, e.Kind, e.InProgress, e.Failed, e.Current)
		gk := schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).GroupKind()
		name := fmt.Sprintf("healthCheckExprs[%d] (%s %s)", i, e.APIVersion, e.Kind)
		if prev, ok := c.byKind[gk]; ok {
			errs = append(errs, fmt.Errorf("%s: %s is judged by %s already", name, gk, prev.name))
			continue
		}
		chk := compileEntry(name, e)
		if chk.err != nil {
			errs = append(errs, chk.err)
		}
		c.byKind[gk] = chk
	}
	c.key = hex.EncodeToString(h.Sum(nil))
	return c, errors.Join(errs...)
}

func compileEntry(name string, e kustomizev1.CustomHealthCheck) *check {
	chk := &check{name: name}
	if e.Current == "" {
		chk.err = fmt.Errorf("%s: current is required", name)
		return chk
	}
	// Flux's order: an object that says it is still on its way, or that
	// it failed, is not Healthy even if current holds too.
	for _, s := range []struct {
		field, expr string
		status      health.Status
	}{
		{"inProgress", e.InProgress, health.Progressing},
		{"failed", e.Failed, health.Degraded},
		{"current", e.Current, health.Healthy},
	} {
		if s.expr == "" {
			continue
		}
		prog, err := compile(s.expr)
		if err != nil {
			chk.err = fmt.Errorf("%s: %s: %w", name, s.field, err)
			return chk
		}
		chk.steps = append(chk.steps, step{field: s.field, status: s.status, prog: prog})
	}
	return chk
}

// Key identifies the expressions: equal for two Checks compiled from the
// same entries, so a cache of health results can tell them apart. "" for
// the nil Checks.
func (c *Checks) Key() string {
	if c == nil {
		return ""
	}
	return c.key
}

// Evaluate returns the health of obj: by the entry for its group and kind
// (any version) when there is one, by health.Evaluate otherwise, and by
// health.Evaluate for a missing object or one being deleted.
func (c *Checks) Evaluate(obj *unstructured.Unstructured) health.Result {
	if c == nil || obj == nil || obj.Object == nil || obj.GetDeletionTimestamp() != nil {
		return health.Evaluate(obj)
	}
	chk, ok := c.byKind[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return health.Evaluate(obj)
	}
	return chk.evaluate(obj)
}

func (chk *check) evaluate(obj *unstructured.Unstructured) health.Result {
	if chk.err != nil {
		return health.Result{Status: health.Unknown, Message: chk.err.Error()}
	}
	// Only an integer observedGeneration is compared, as Flux does: some
	// kinds use the name for something else, and their expressions decide.
	if observed, ok, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); err == nil && ok {
		if gen := obj.GetGeneration(); observed != gen {
			return health.Result{Status: health.Progressing, Message: fmt.Sprintf(
				"waiting for its controller to observe generation %d (status.observedGeneration is %d)", gen, observed)}
		}
	}
	for _, s := range chk.steps {
		holds, err := s.prog.eval(obj.Object)
		if err != nil {
			return health.Result{Status: health.Unknown, Message: fmt.Sprintf("%s: %s: %v", chk.name, s.field, err)}
		}
		if holds {
			return health.Result{Status: s.status, Message: fmt.Sprintf("%s: %s holds", chk.name, s.field)}
		}
	}
	return health.Result{Status: health.Progressing, Message: chk.name + ": current does not hold yet"}
}
