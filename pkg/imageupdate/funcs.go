package imageupdate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// maxBuiltBytes bounds the text one execution's functions build in all:
// a template can feed a result back into a function ({{$x = print $x
// $x}}), so bounding each result alone would let the work double at each
// step.
const maxBuiltBytes = 256 << 10

// maxWidth bounds printf's widths and precisions.
const maxWidth = 256

type budget struct{ left int }

func (b *budget) allow(n int) error {
	if n < 0 || n > b.left {
		return fmt.Errorf("the message template builds more than %d bytes of text", maxBuiltBytes)
	}
	return nil
}

func (b *budget) charge(s string) (string, error) {
	if err := b.allow(len(s)); err != nil {
		return "", err
	}
	b.left -= len(s)
	return s, nil
}

// argBytes bounds what printing args builds.
func argBytes(args []any) int {
	n := len(args) + 1
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += len(s)
		} else {
			n += len(fmt.Sprint(a))
		}
	}
	return n
}

// funcs replaces text/template's builtins that build text (print,
// printf, println, html, js, urlquery) with ones that spend b, and adds
// the text helpers Flux's examples use (lower, contains, ...). None reads
// the environment, a file or the network: sprig's map, which Flux offers,
// also holds env and list builders that defeat the bounds.
func (b *budget) funcs() template.FuncMap {
	sprint := func(factor int, f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			if err := b.allow(factor * argBytes(args)); err != nil {
				return "", err
			}
			return b.charge(f(args...))
		}
	}
	grows := func(factor int, f func(string) string) func(string) (string, error) {
		return func(s string) (string, error) {
			if err := b.allow(factor * len(s)); err != nil {
				return "", err
			}
			return b.charge(f(s))
		}
	}
	return template.FuncMap{
		"print":   sprint(1, fmt.Sprint),
		"println": sprint(1, fmt.Sprintln),
		"printf": func(format string, args ...any) (string, error) {
			verbs, err := checkWidths(format)
			if err != nil {
				return "", err
			}
			if err := b.allow(len(format) + 10*argBytes(args) + verbs*maxWidth); err != nil {
				return "", err
			}
			return b.charge(fmt.Sprintf(format, args...))
		},
		// An escape is at most six bytes for one.
		"html":     sprint(6, template.HTMLEscaper),
		"js":       sprint(6, template.JSEscaper),
		"urlquery": sprint(6, template.URLQueryEscaper),
		"upper":    grows(2, strings.ToUpper),
		"lower":    grows(2, strings.ToLower),
		"quote":    grows(10, strconv.Quote),
		"trim":     strings.TrimSpace,
		"trimPrefix": func(prefix, s string) string {
			return strings.TrimPrefix(s, prefix)
		},
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
		"replace": func(old, new, s string) (string, error) {
			if err := b.allow(len(s) + strings.Count(s, old)*(len(new)-len(old))); err != nil {
				return "", err
			}
			return b.charge(strings.ReplaceAll(s, old, new))
		},
		"truncate": func(n int, s string) string {
			if n < 1 {
				return ""
			}
			if utf8.RuneCountInString(s) <= n {
				return s
			}
			return string([]rune(s)[:n-1]) + "…"
		},
		"default": func(def, s string) string { return cmpOr(s, def) },
	}
}

// templateFuncs are the names templates may call, for parsing; each
// execution gets functions with a budget of their own.
var templateFuncs = (&budget{}).funcs()

var verbWidth = regexp.MustCompile(`%[-+# 0]*(\*|\d+)?(?:\.(\*|\d+))?`)

// checkWidths refuses widths and precisions over maxWidth
// ({{printf "%999999999d" 1}} would allocate a gigabyte) and counts the
// verbs.
func checkWidths(format string) (int, error) {
	m := verbWidth.FindAllStringSubmatch(format, -1)
	for _, v := range m {
		for _, n := range v[1:] {
			if n == "*" {
				return 0, fmt.Errorf("printf: * widths are not supported")
			}
			if w, err := strconv.Atoi(n); n != "" && (err != nil || w > maxWidth) {
				return 0, fmt.Errorf("printf: widths and precisions are at most %d", maxWidth)
			}
		}
	}
	return len(m), nil
}
