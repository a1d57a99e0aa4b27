package benchkit

import (
	"os/exec"
	"strings"

	"plumb.dev/e2e/localenv"
)

// SourceState names the commit a run measured, "commit <short hash>", and
// says so when the checkout had uncommitted changes under dirs (the
// programs measured), which the figures then also reflect.
func SourceState(dirs ...string) string {
	root, err := localenv.RepoRoot()
	if err != nil {
		return "?"
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	state := "commit " + strings.TrimSpace(string(head))
	dirty, err := exec.Command("git", append([]string{"-C", root, "status", "--porcelain", "--"}, dirs...)...).Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		state += " with uncommitted changes under " + strings.Join(dirs, ", ")
	}
	return state
}
