package alerttext

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// maxWidth bounds printf's widths and precisions.
const maxWidth = 256

// Funcs are the functions templates may call besides text/template's
// builtins (whose printf is replaced by a bounded one). None reads the
// environment, a file or the network.
var Funcs = template.FuncMap{
	"printf":     boundedPrintf,
	"upper":      strings.ToUpper,
	"lower":      strings.ToLower,
	"trim":       strings.TrimSpace,
	"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
	"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
	"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
	"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
	"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
	"replace":    boundedReplace,
	"truncate":   truncate,
	"default":    func(def, s string) string { return cmpOr(s, def) },
	"quote":      strconv.Quote,
	// shortRevision turns main@sha1:<40 hex> into main@sha1:<7 hex>.
	"shortRevision": shortRevision,
}

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

// boundedPrintf is fmt.Sprintf with widths and precisions of at most
// maxWidth, so {{printf "%999999999d" 1}} cannot allocate a gigabyte.
func boundedPrintf(format string, args ...any) (string, error) {
	for _, m := range verbWidth.FindAllStringSubmatch(format, -1) {
		for _, n := range m[1:] {
			if n == "*" {
				return "", fmt.Errorf("printf: * widths are not supported")
			}
			if v, err := strconv.Atoi(n); n != "" && (err != nil || v > maxWidth) {
				return "", fmt.Errorf("printf: widths and precisions are at most %d", maxWidth)
			}
		}
	}
	return fmt.Sprintf(format, args...), nil
}

// boundedReplace replaces every old with new in s, refusing results over
// MaxMessageBytes before building them.
func boundedReplace(old, new, s string) (string, error) {
	n := strings.Count(s, old)
	if len(s)+n*(len(new)-len(old)) > MaxMessageBytes {
		return "", fmt.Errorf("replace: the result would be longer than %d bytes", MaxMessageBytes)
	}
	return strings.ReplaceAll(s, old, new), nil
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
