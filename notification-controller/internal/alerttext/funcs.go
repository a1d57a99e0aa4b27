package alerttext

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"
)

// maxWidth bounds printf's widths and precisions.
const maxWidth = 256

// MaxBuiltBytes bounds the text one execution's functions may build in
// all: a template can feed a function's result back into it
// ({{$x = print $x $x}}, or {{with print . .}} nested), so bounding each
// result alone would still let the work double at every step.
const MaxBuiltBytes = 256 << 10

// budget is what is left of MaxBuiltBytes for one execution. Every
// function that returns text checks what its result may grow to before
// building it, and charges what it built.
type budget struct{ left int }

var errBudget = fmt.Errorf("the template builds more than %d bytes of text", MaxBuiltBytes)

// allow checks that a result of at most n bytes fits.
func (b *budget) allow(n int) error {
	if n > b.left || n < 0 {
		return errBudget
	}
	return nil
}

// charge records a built result.
func (b *budget) charge(s string) (string, error) {
	if err := b.allow(len(s)); err != nil {
		return "", err
	}
	b.left -= len(s)
	return s, nil
}

// argBytes is how long args print as, a bound of what a print or
// printf of them builds. Strings count their length; anything else
// (a number, the metadata map) is printed to count it: those are small.
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

// funcs are the functions of one execution, spending b. They replace
// text/template's builtins that build text (print, printf, println,
// html, js, urlquery) with bounded ones; the other builtins (index, slice,
// len, and, or, not, comparisons) build nothing. None reads the
// environment, a file or the network.
func (b *budget) funcs() texttemplate.FuncMap {
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
	return texttemplate.FuncMap{
		"print":   sprint(fmt.Sprint),
		"println": sprint(fmt.Sprintln),
		"printf": func(format string, args ...any) (string, error) {
			verbs, err := checkWidths(format)
			if err != nil {
				return "", err
			}
			// %x doubles an argument and %q may quote a byte in up to
			// ten; a width adds at most maxWidth per verb.
			if err := b.allow(len(format) + 10*argBytes(args) + verbs*maxWidth); err != nil {
				return "", err
			}
			return b.charge(fmt.Sprintf(format, args...))
		},
		"html":     escape(texttemplate.HTMLEscaper),
		"js":       escape(texttemplate.JSEscaper),
		"urlquery": escape(texttemplate.URLQueryEscaper),
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
// (budget.funcs).
var Funcs = (&budget{}).funcs()

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

// checkWidths refuses widths and precisions over maxWidth, so
// {{printf "%999999999d" 1}} cannot allocate a gigabyte, and returns how
// many verbs format has.
func checkWidths(format string) (int, error) {
	matches := verbWidth.FindAllStringSubmatch(format, -1)
	for _, m := range matches {
		for _, n := range m[1:] {
			if n == "*" {
				return 0, fmt.Errorf("printf: * widths are not supported")
			}
			if v, err := strconv.Atoi(n); n != "" && (err != nil || v > maxWidth) {
				return 0, fmt.Errorf("printf: widths and precisions are at most %d", maxWidth)
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
