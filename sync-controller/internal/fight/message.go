package fight

import (
	"fmt"
	"strings"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
)

// Message says who fights over what and how to end it: the
// DriftContested condition and event say it per fight. ignoreField names
// the ignore rules of the owner's kind (spec.ignore of a Kustomization).
func Message(c kustomizev1.ContestedDrift, ignoreField string) string {
	var b strings.Builder
	fields := strings.Join(c.Fields, ", ")
	fmt.Fprintf(&b, "%s: %s rewritten by field manager %s after each correction", c.Object, fields, managerName(c.Manager))
	if c.Controller != "" {
		fmt.Fprintf(&b, " (%s scales this %s)", c.Controller, kindOf(c.Object))
	}
	fmt.Fprintf(&b, "; %d correction(s) so far, now backing off", c.Reverts)
	if c.NextRevert != nil {
		fmt.Fprintf(&b, " (next at %s)", c.NextRevert.UTC().Format(time.RFC3339))
	}
	b.WriteString(". To resolve: ")
	if c.Controller != "" {
		fmt.Fprintf(&b, "leave %s out of Git, or ", fields)
	} else {
		b.WriteString("stop the other writer, leave the fields out of Git, or ")
	}
	fmt.Fprintf(&b, "add %s {paths: [%s], target: {kind: %s, name: %s}}", ignoreField, strings.Join(pointers(c.Fields), ", "), kindOf(c.Object), nameOf(c.Object))
	return b.String()
}

func managerName(m string) string {
	if m == "" {
		return "(unknown: the fields were removed)"
	}
	return m
}

func kindOf(object string) string { kind, _, _ := strings.Cut(object, "/"); return kind }

func nameOf(object string) string { return object[strings.LastIndex(object, "/")+1:] }

// pointers turns pkg/diff paths into the JSON pointers spec.ignore takes.
func pointers(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, diff.PointerOf(p))
	}
	return out
}
