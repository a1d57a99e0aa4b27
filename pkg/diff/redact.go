package diff

import (
	"encoding/json"
	"strings"
)

// MinRedactLen is the shortest secret value a Redactor looks for: shorter
// ones (a "1", a "yes") would hide unrelated fields everywhere, and carry
// little secret anyway. pkg/render uses the same bound for its messages.
const MinRedactLen = 4

// redactedText stands in for a secret value inside a path.
const redactedText = "<redacted>"

// Redactor hides values that came from Secrets — postBuild.substituteFrom
// puts them into the rendered manifests as plain text, in any field of any
// kind — from changes. A change whose live or desired value contains a
// secret value has both values replaced by Redacted: the field holds the
// secret in Git, so what the cluster holds there (an older or a foreign
// copy) is as sensitive. A path that contains a secret value (a map key
// substituted from a Secret) has the value replaced by <redacted>. Secret
// objects' own data needs no Redactor: Diff never shows it.
//
// The zero Redactor and a nil one change nothing.
type Redactor struct {
	// needles are the secret values as they appear in JSON text and
	// paths: raw and JSON-escaped.
	needles []string
	// all hides every value.
	all bool
}

// NewRedactor returns a Redactor for the secret values; values shorter
// than MinRedactLen are not looked for.
func NewRedactor(values []string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) < MinRedactLen {
			continue
		}
		quoted, _ := json.Marshal(v)
		for _, n := range []string{v, string(quoted[1 : len(quoted)-1])} {
			if !seen[n] {
				seen[n] = true
				r.needles = append(r.needles, n)
			}
		}
	}
	return r
}

// RedactAll returns a Redactor that hides every value: for when the secret
// values cannot be known (the Secret could not be read).
func RedactAll() *Redactor { return &Redactor{all: true} }

// Changes returns the changes with secret values hidden; the input is not
// modified.
func (r *Redactor) Changes(changes []Change) []Change {
	if r == nil || (!r.all && len(r.needles) == 0) {
		return changes
	}
	out := make([]Change, len(changes))
	for i, c := range changes {
		c.Path = r.Path(c.Path)
		if r.all || r.contains(c.Before) || r.contains(c.After) {
			if c.Before != "" {
				c.Before = Redacted
			}
			if c.After != "" {
				c.After = Redacted
			}
		}
		out[i] = c
	}
	return out
}

// Path returns path with every secret value in it replaced by <redacted>.
func (r *Redactor) Path(path string) string {
	if r == nil {
		return path
	}
	for _, n := range r.needles {
		path = strings.ReplaceAll(path, n, redactedText)
	}
	return path
}

func (r *Redactor) contains(s string) bool {
	for _, n := range r.needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}
