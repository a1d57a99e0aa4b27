package textbudget

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// MaxWidth bounds printf's widths and precisions.
const MaxWidth = 256

// MaxBuiltBytes is the default budget of the text one execution's
// functions may build in all.
const MaxBuiltBytes = 256 << 10

// Budget is what is left of the text one execution may build. Every
// function that returns text checks what its result may grow to before
// building it, and charges what it built.
type Budget struct{ left, max int }

// NewBudget is a budget of max bytes.
func NewBudget(max int) *Budget { return &Budget{left: max, max: max} }

func (b *Budget) allow(n int) error {
	if n > b.left || n < 0 {
		return fmt.Errorf("the template builds more than %d bytes of text", b.max)
	}
	return nil
}

func (b *Budget) charge(s string) (string, error) {
	if err := b.allow(len(s)); err != nil {
		return "", err
	}
	b.left -= len(s)
	return s, nil
}

// argBytes is how long args print as, a bound of what a print or
// printf of them builds. Strings count their length; anything else
// (a number, a map) is printed to count it: those are small.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += len(s)
		} else {
			n += len(fmt.Sprint(a))
		}
	}
	return n
}

// Funcs are the functions of one execution, spending b.
func (b *Budget) Funcs() template.FuncMap {
	// grows is a function whose result is at most factor times its
	// input's length (escaping, case mapping).
	grows := func(factor int, f func(string) string) func(string) (string, error) {
		return func(s string) (string, error) {
			if err := b.allow(factor * len(s)); err != nil {
				return "", err
			}
			return b.charge(f(s))
		}
	}
	sprint := func(f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			if err := b.allow(argBytes(args) + len(args) + 1); err != nil {
				return "", err
			}
			return b.charge(f(args...))
		}
	}
	escape := func(f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			// An escape is at most six bytes for one (\u0027 for ').
			if err := b.allow(6 * (argBytes(args) + len(args))); err != nil {
				return "", err
			}
			return b.charge(f(args...))
		}
	}
	return template.FuncMap{
		"print":   sprint(fmt.Sprint),
		"println": sprint(fmt.Sprintln),
		"printf": func(format string, args ...any) (string, error) {
			verbs, err := checkWidths(format)
			if err != nil {
				return "", err
			}
			// %x doubles an argument and %q may quote a byte in up to
			// ten; a width adds at most MaxWidth per verb.
			if err := b.allow(len(format) + 10*argBytes(args) + verbs*MaxWidth); err != nil {
				return "", err
			}
			return b.charge(fmt.Sprintf(format, args...))
		},
		"html":     escape(template.HTMLEscaper),
		"js":       escape(template.JSEscaper),
		"urlquery": escape(template.URLQueryEscaper),
		// Case mapping can lengthen a rune by half (ɐ, 2 bytes, to Ɐ, 3).
		"upper":      grows(2, strings.ToUpper),
		"lower":      grows(2, strings.ToLower),
		"quote":      grows(10, strconv.Quote),
		"trim":       strings.TrimSpace,
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
		"replace": func(old, new, s string) (string, error) {
			n := strings.Count(s, old)
			if err := b.allow(len(s) + n*(len(new)-len(old))); err != nil {
				return "", err
			}
			return b.charge(strings.ReplaceAll(s, old, new))
		},
		"truncate": truncate,
		"default":  func(def, s string) string { return cmpOr(s, def) },
		// shortRevision turns main@sha1:<40 hex> into main@sha1:<7 hex>.
		"shortRevision": shortRevision,
	}
}

// Funcs are the names templates may call besides text/template's
// builtins, for parsing; each execution runs with a budget of its own
// (Runner.Execute).
var Funcs = NewBudget(0).Funcs()

// Arguments come last so a pipeline reads naturally:
// {{ .Message | truncate 80 }}, {{ .Reason | replace "Reconciliation" "" }}.

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// verbWidth matches the width and precision of a printf verb.
var verbWidth = regexp.MustCompile(`%[-+# 0]*(\*|\d+)?(?:\.(\*|\d+))?`)

// checkWidths refuses widths and precisions over MaxWidth, so
// {{printf "%999999999d" 1}} cannot allocate a gigabyte, and returns how
// many verbs format has.
func checkWidths(format string) (int, error) {
	matches := verbWidth.FindAllStringSubmatch(format, -1)
	for _, m := range matches {
		for _, n := range m[1:] {
			if n == "*" {
				return 0, fmt.Errorf("printf: * widths are not supported")
			}
			if v, err := strconv.Atoi(n); n != "" && (err != nil || v > MaxWidth) {
				return 0, fmt.Errorf("printf: widths and precisions are at most %d", MaxWidth)
			}
		}
	}
	return len(matches), nil
}

// truncate cuts s to n runes, ending it with "…" when cut.
func truncate(n int, s string) string {
	switch {
	case n < 1:
		return ""
	case utf8.RuneCountInString(s) <= n:
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// shortRevision shortens the hex digest of a Flux-style revision
// (<ref>@<algo>:<hex>, or <algo>:<hex>) to 7 digits; other strings are
// returned as they are.
func shortRevision(rev string) string {
	i := strings.LastIndexByte(rev, ':')
	if i < 0 || len(rev)-i-1 <= 7 {
		return rev
	}
	return rev[:i+1] + rev[i+1:i+8]
}
