package artifact

import (
	"bufio"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IgnoreFile is the name of the ignore-rule files read from a packed tree.
const IgnoreFile = ".sourceignore"

// DefaultIgnore holds the rules applied when an object sets no spec.ignore:
// Git metadata files and common binary archives and images, which a
// Kubernetes manifests artifact never needs.
const DefaultIgnore = `# Git metadata
.gitignore
.gitattributes
.gitmodules
# binaries
*.jpg
*.jpeg
*.gif
*.png
*.wmv
*.flv
*.tar.gz
*.zip
`

// maxIgnoreLine bounds one rule line; longer lines are not rules anybody
// writes and would only cost memory.
const maxIgnoreLine = 64 << 10

// ParseIgnore reads gitignore-syntax rules from r, scoped to the folder
// domain (path elements from the tree's root; nil for the root). Blank lines
// and comments (#) are skipped, a trailing carriage return is dropped, and a
// leading backslash escapes '#' as in Git. Lines longer than 64 KiB are
// skipped. It never fails on content: any line is a pattern.
func ParseIgnore(r io.Reader, domain []string) ([]gitignore.Pattern, error) {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxIgnoreLine)
	for sc.Scan() {
		if p := parseIgnoreLine(sc.Text(), domain); p != nil {
			ps = append(ps, p)
		}
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return ps, err
	}
	return ps, nil
}

// ParseIgnoreString is ParseIgnore over a string.
func ParseIgnoreString(rules string, domain []string) []gitignore.Pattern {
	ps, _ := ParseIgnore(strings.NewReader(rules), domain)
	return ps
}

func parseIgnoreLine(line string, domain []string) gitignore.Pattern {
	line = strings.TrimSuffix(line, "\r")
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	if strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	// A pattern that is only "!" or "/" (after go-git strips them) would
	// match everything or nothing in surprising ways; skip it as Git does.
	if t := strings.Trim(line, "!/ "); t == "" {
		return nil
	}
	return gitignore.ParsePattern(line, domain)
}

// Ignorer decides which paths of a tree are left out of an artifact. Rules
// are kept in ascending priority: the last matching rule wins.
type Ignorer struct {
	base     []gitignore.Pattern // defaults or nothing
	nested   []gitignore.Pattern // from .sourceignore files, in walk order
	override []gitignore.Pattern // spec.ignore
}

// NewIgnorer returns an Ignorer for an object's spec.ignore: nil means the
// defaults apply (DefaultIgnore); a set value replaces them. .sourceignore
// files are added by Pack as it walks the tree (AddFile).
func NewIgnorer(specIgnore *string) *Ignorer {
	ig := &Ignorer{}
	if specIgnore == nil {
		ig.base = ParseIgnoreString(DefaultIgnore, nil)
	} else {
		ig.override = ParseIgnoreString(*specIgnore, nil)
	}
	return ig
}

// AddRules adds rules scoped to domain (a folder of the tree) with a
// priority above the defaults and the rules added before, but below
// spec.ignore.
func (ig *Ignorer) AddRules(r io.Reader, domain []string) error {
	ps, err := ParseIgnore(r, domain)
	ig.nested = append(ig.nested, ps...)
	return err
}

// Match reports whether the slash-separated path elements (relative to the
// tree's root) are ignored. A folder that matches is left out whole.
func (ig *Ignorer) Match(path []string, isDir bool) bool {
	// Git's own folder (and a submodule's .git file or folder) is never
	// part of the tree, whatever the rules say.
	if len(path) > 0 && path[len(path)-1] == ".git" {
		return true
	}
	// Walk from the highest priority down; the first rule that says
	// anything decides, as in Git.
	for _, group := range [][]gitignore.Pattern{ig.override, ig.nested, ig.base} {
		for i := len(group) - 1; i >= 0; i-- {
			switch group[i].Match(path, isDir) {
			case gitignore.Exclude:
				return true
			case gitignore.Include:
				return false
			}
		}
	}
	return false
}

// MatchString is Match for a slash-separated path.
func (ig *Ignorer) MatchString(path string, isDir bool) bool {
	return ig.Match(strings.Split(strings.Trim(path, "/"), "/"), isDir)
}
