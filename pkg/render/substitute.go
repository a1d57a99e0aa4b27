package render

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Variable is one postBuild substitution value.
type Variable struct {
	Value string
	// Secret marks a value read from a Secret: it never appears in an error,
	// an event or a log line.
	Secret bool
}

// Variables are the substitution values by name.
type Variables map[string]Variable

// varName is the variable name syntax Flux accepts (and checks keys against).
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// ValidName reports whether name may be used as a substitution variable.
func ValidName(name string) bool { return varName.MatchString(name) }

// SyntaxError is a malformed ${...} reference. Its message quotes only the
// manifest text from Git, never a substituted value.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// UndefinedError lists variables that are referenced without a default and
// have no value, in strict mode.
type UndefinedError struct {
	Names []string
}

func (e *UndefinedError) Error() string {
	return fmt.Sprintf("undefined variable(s) without a default: %s", strings.Join(e.Names, ", "))
}

// Substitution is the outcome of Substitute.
type Substitution struct {
	Text string
	// Used lists the variables whose value was put in Text, sorted.
	Used []string
}

// Substitute replaces the variable references in text:
//
//	${name}             the value of name; without one, "" (or an
//	                    UndefinedError when strict)
//	${name:=default}    the value of name when set and not empty, else default
//	${name:-default}    the same
//	$${name}            the literal text ${name} (the escape)
//
// Anything else, including $name without braces and a lone $, is copied as
// is. A "${" that is not a well-formed reference is a SyntaxError, like
// Flux's, so a typo never passes silently. Defaults cannot hold "${" or "}".
func Substitute(text string, lookup func(name string) (string, bool), strict bool) (Substitution, error) {
	if !strings.Contains(text, "$") {
		return Substitution{Text: text}, nil
	}
	var (
		b         strings.Builder
		used      = map[string]bool{}
		undefined = map[string]bool{}
	)
	b.Grow(len(text))
	i := 0
	for {
		j := strings.IndexByte(text[i:], '$')
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		b.WriteString(text[i : i+j])
		i += j
		rest := text[i:]
		switch {
		case strings.HasPrefix(rest, "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(rest, "${"):
			end := strings.IndexByte(rest, '}')
			if nl := strings.IndexByte(rest, '\n'); end < 0 || (nl >= 0 && nl < end) {
				return Substitution{}, &SyntaxError{Line: lineOf(text, i), Msg: fmt.Sprintf("unclosed variable reference %q", clip(rest, 40))}
			}
			name, def, hasDef, err := parseRef(rest[2:end])
			if err != nil {
				return Substitution{}, &SyntaxError{Line: lineOf(text, i), Msg: err.Error()}
			}
			value, ok := lookup(name)
			switch {
			case ok && (value != "" || !hasDef):
				b.WriteString(value)
				used[name] = true
			case hasDef:
				b.WriteString(def)
			case strict:
				undefined[name] = true
			}
			i += end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	if len(undefined) > 0 {
		return Substitution{}, &UndefinedError{Names: sortedKeys(undefined)}
	}
	return Substitution{Text: b.String(), Used: sortedKeys(used)}, nil
}

// parseRef parses the inside of ${...}.
func parseRef(ref string) (name, def string, hasDef bool, err error) {
	n := 0
	for n < len(ref) && isNameByte(ref[n], n == 0) {
		n++
	}
	name, op := ref[:n], ref[n:]
	if name == "" {
		return "", "", false, fmt.Errorf("invalid variable reference %q: a name must start with a letter or _", "${"+ref+"}")
	}
	switch {
	case op == "":
		return name, "", false, nil
	case strings.HasPrefix(op, ":=") || strings.HasPrefix(op, ":-"):
		def = op[2:]
		if strings.Contains(def, "${") {
			return "", "", false, fmt.Errorf("invalid variable reference %q: defaults cannot hold variable references", "${"+ref+"}")
		}
		return name, def, true, nil
	default:
		return "", "", false, fmt.Errorf("invalid variable reference %q: expected ${name}, ${name:=default} or ${name:-default}", "${"+ref+"}")
	}
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// Escape returns text with every "${" written as "$${", so that Substitute
// gives text back unchanged.
func Escape(text string) string { return strings.ReplaceAll(text, "${", "$${") }

func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

func clip(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n {
		return s[:i]
	}
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
