package decrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The tree a SOPS file is loaded into, as the SOPS library shapes it (so
// that each store prints the same bytes): a document is a branch, an
// ordered list of items; a value is a branch, a list ([]any), a comment, or
// a scalar of the types the format's decoder gives (string, int, float64,
// bool, time.Time, []byte, nil). The library refuses any other scalar type
// when it walks the tree, and so does walk here.
type (
	branch []item
	item   struct{ key, value any }
	// comment is a comment line of a YAML, dotenv or INI file, without its
	// '#'. Its fields are exported with the library's names because a
	// value can decrypt to a comment (type "comment") and is then printed
	// as a struct, as the library prints it.
	comment struct {
		Value  string
		Inline bool
	}
)

// rules are the metadata fields that decide which values of a file are
// encrypted. At most one is set (metadata.go); with none, values under a
// key ending in _unencrypted are left in the clear.
type rules struct {
	unencryptedSuffix, encryptedSuffix string
	// The regexes, nil when unset. A regex that does not compile matches
	// nothing, as in the library (which ignores the error).
	unencryptedRegex, encryptedRegex               matcher
	unencryptedCommentRegex, encryptedCommentRegex matcher
}

type matcher func(string) bool

func compileRule(expr string) matcher {
	if expr == "" {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return func(string) bool { return false }
	}
	return re.MatchString
}

// encryptedAt is SOPS's rule for whether the value at path, under the
// comments in stack (one list per enclosing map or list), is encrypted; a
// comment that itself matches encrypted_comment_regex is not.
func (r *rules) encryptedAt(path []string, stack [][]string, isComment bool) bool {
	enc := true
	anyKey := func(match func(string) bool) bool {
		for _, p := range path {
			if match(p) {
				return true
			}
		}
		return false
	}
	if r.unencryptedSuffix != "" && anyKey(func(p string) bool { return strings.HasSuffix(p, r.unencryptedSuffix) }) {
		enc = false
	}
	if r.encryptedSuffix != "" {
		enc = anyKey(func(p string) bool { return strings.HasSuffix(p, r.encryptedSuffix) })
	}
	if r.unencryptedRegex != nil && anyKey(r.unencryptedRegex) {
		enc = false
	}
	if r.encryptedRegex != nil {
		enc = anyKey(r.encryptedRegex)
	}
	if re := r.unencryptedCommentRegex; re != nil {
		for _, cs := range stack {
			for _, c := range cs {
				if re(c) {
					enc = false
				}
			}
		}
	}
	if re := r.encryptedCommentRegex; re != nil {
		enc = false
		last := len(stack) - 1
		for i, cs := range stack {
			for j, c := range cs {
				// The comment that matches is itself left in the clear.
				if isComment && i == last && j == len(cs)-1 {
					continue
				}
				if re(c) {
					enc = true
				}
			}
		}
	}
	return enc
}

// walker decrypts the values of a tree in place, as the library's
// Tree.Decrypt does (without computing the MAC).
type walker struct {
	rules rules
	key   []byte
	// seen is called with each decrypted value's text.
	seen func(string)
}

func (w *walker) value(v any, path []string, stack [][]string) (any, error) {
	switch v := v.(type) {
	case string, int, bool, float64, time.Time, comment:
		return w.leaf(v, path, stack)
	case []byte:
		return w.leaf(string(v), path, stack)
	case branch:
		return w.branch(v, path, stack)
	case []any:
		return w.list(v, path, stack)
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("a value of type %T cannot be decrypted", v)
	}
}

func (w *walker) list(in []any, path []string, stack [][]string) ([]any, error) {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for i, v := range in {
		c, isComment := v.(comment)
		if isComment {
			stack[top] = append(stack[top], c.Value)
		}
		out, err := w.value(v, path, stack)
		if err != nil {
			return nil, err
		}
		in[i] = out
		if !isComment {
			stack[top] = nil
		}
	}
	return in, nil
}

func (w *walker) branch(in branch, path []string, stack [][]string) (branch, error) {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for i, it := range in {
		if c, ok := it.key.(comment); ok {
			stack[top] = append(stack[top], c.Value)
			out, err := w.value(c, path, stack)
			if err != nil {
				return nil, err
			}
			switch out := out.(type) {
			case comment:
				in[i].key = out
			case string:
				in[i].key = comment{Value: out, Inline: c.Inline}
			default:
				return nil, fmt.Errorf("a comment decrypted to a %T", out)
			}
			continue
		}
		c, valueIsComment := it.value.(comment)
		if valueIsComment {
			stack[top] = append(stack[top], c.Value)
		}
		k, ok := it.key.(string)
		if !ok {
			return nil, fmt.Errorf("a key of type %T: only string keys are supported", it.key)
		}
		out, err := w.value(it.value, append(path[:len(path):len(path)], k), stack)
		if err != nil {
			return nil, err
		}
		in[i].value = out
		if !valueIsComment {
			stack[top] = nil
		}
	}
	return in, nil
}

func (w *walker) leaf(v any, path []string, stack [][]string) (any, error) {
	c, isComment := v.(comment)
	if !w.rules.encryptedAt(path, stack, isComment) {
		return v, nil
	}
	aad := strings.Join(path, ":") + ":"
	if isComment {
		out, err := decryptValue(c.Value, w.key, aad)
		if err != nil {
			// A comment in the clear where one was expected: kept, as the
			// library keeps it (files of older SOPS versions).
			return c, nil
		}
		w.saw(out)
		return out, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("at %s: expected an encrypted value (a string), got a %T", displayPath(path), v)
	}
	out, err := decryptValue(s, w.key, aad)
	if err != nil {
		return nil, fmt.Errorf("at %s: %w", displayPath(path), err)
	}
	if t, ok := out.(time.Time); ok {
		// The library hashes each value for the MAC, which fails for a
		// time it cannot print.
		if _, err := t.MarshalText(); err != nil {
			return nil, fmt.Errorf("at %s: %w", displayPath(path), err)
		}
	}
	w.saw(out)
	return out, nil
}

func (w *walker) saw(v any) {
	if w.seen == nil {
		return
	}
	// Each value as its plaintext was, so that Redact finds it in a
	// message quoting the decrypted file.
	switch v := v.(type) {
	case string:
		w.seen(v)
	case []byte:
		w.seen(string(v))
	case comment:
		w.seen(v.Value)
	case int:
		w.seen(strconv.Itoa(v))
	case float64:
		w.seen(strconv.FormatFloat(v, 'f', -1, 64))
	case time.Time:
		if b, err := v.MarshalText(); err == nil {
			w.seen(string(b))
		}
	}
}

func displayPath(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}

// encValue is the form of an encrypted value. Like the library's, the
// pattern is anchored at the start only and its groups are greedy.
var encValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// decryptValue decrypts one value with the data key: AES-256-GCM with the
// path of keys as additional data, and the plaintext read back as its
// type says. An empty string is an empty value (SOPS does not encrypt
// those).
func decryptValue(s string, key []byte, aad string) (any, error) {
	if s == "" {
		return "", nil
	}
	m := encValue.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("not an encrypted value (ENC[AES256_GCM,...])")
	}
	var parts [3][]byte
	for i, name := range []string{"data", "iv", "tag"} {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, fmt.Errorf("the %s of an encrypted value is not base64: %v", name, err)
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(iv) == 0 {
		return nil, fmt.Errorf("an encrypted value has an empty iv")
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("AES-GCM decryption failed (the data key or the value's path is not the one it was encrypted with)")
	}
	text := string(plain)
	switch m[4] {
	case "str":
		return text, nil
	case "int":
		return strconv.Atoi(text)
	case "float":
		return strconv.ParseFloat(text, 64)
	case "bytes":
		return plain, nil
	case "bool":
		return strconv.ParseBool(text)
	case "time":
		var t time.Time
		err := t.UnmarshalText(plain)
		return t, err
	case "comment":
		return comment{Value: text}, nil
	}
	return nil, fmt.Errorf("unknown type %q of an encrypted value", m[4])
}
