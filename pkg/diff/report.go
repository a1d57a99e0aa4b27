package diff

import "fmt"

// Paths lists the result's changes as <object>:<path>, the form of the
// Kustomization's status.drift.paths.
func (r Result) Paths() []string {
	out := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = r.Object + ":" + c.Path
	}
	return out
}

// Truncate keeps the first max items; when it drops some, note says
// "and N more" for a message, otherwise note is empty. max < 0 counts as 0.
func Truncate[T any](items []T, max int) (kept []T, note string) {
	if max < 0 {
		max = 0
	}
	if len(items) <= max {
		return items, ""
	}
	n := len(items) - max
	if n == 1 {
		return items[:max], "and 1 more change"
	}
	return items[:max], fmt.Sprintf("and %d more changes", n)
}
