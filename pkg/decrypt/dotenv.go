package decrypt

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// loadDotenv reads a dotenv file as the library's dotenv store does: one
// KEY=value a line, value up to the line's end with \n read as a newline,
// '#' lines comments, empty lines skipped.
func loadDotenv(in []byte, b *budget) ([]branch, error) {
	var br branch
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if err := b.take(1); err != nil {
			return nil, err
		}
		if line[0] == '#' {
			br = append(br, item{key: comment{Value: string(line[1:])}})
			continue
		}
		k, v, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return nil, fmt.Errorf("a dotenv line without '=': %.40q", line)
		}
		br = append(br, item{key: string(k), value: strings.ReplaceAll(string(v), `\n`, "\n")})
	}
	return []branch{br}, nil
}

// emitDotenv prints the first document as the library's dotenv store
// does: a newline in a value as \n, other scalars as valueText prints
// them; a map or list is an error.
func emitDotenv(docs []branch) ([]byte, error) {
	if len(docs) == 0 {
		return nil, fmt.Errorf("no document to print")
	}
	var out bytes.Buffer
	for _, it := range docs[0] {
		switch it.value.(type) {
		case branch, []any:
			return nil, fmt.Errorf("a dotenv file cannot hold the map or list under %v", it.key)
		}
		if c, ok := it.key.(comment); ok {
			fmt.Fprintf(&out, "#%s\n", c.Value)
			continue
		}
		v, ok := it.value.(string)
		if ok {
			v = strings.ReplaceAll(v, "\n", `\n`)
		} else {
			v = valueText(it.value)
		}
		fmt.Fprintf(&out, "%s=%s\n", it.key, v)
	}
	return out.Bytes(), nil
}

// valueText is how the library prints a scalar in a dotenv or INI file: a
// float always with a '.' or an exponent, a time in RFC 3339.
func valueText(v any) string {
	switch v := v.(type) {
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsRune(s, '.') && !strings.ContainsRune(s, 'E') {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}
