package decrypt

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"plumb.dev/pkg/diff"
)

// Bounds on what is decrypted.
const (
	// MaxFileBytes bounds one encrypted file or object (Flux's bound).
	MaxFileBytes = 5 << 20
	// MaxMasterKeys bounds the master keys one file names: each is a try.
	MaxMasterKeys = 64
	// MaxKeyGroups bounds a file's key groups (Shamir shares).
	MaxKeyGroups = 16
	// MaxDepth bounds how deeply maps and lists nest (YAML aliases
	// included): deeper is no configuration, and the readers recurse.
	MaxDepth = 100
	// MaxValues bounds the values, maps and lists of one file, YAML
	// aliases expanded, so that a small file cannot expand to a large
	// tree.
	MaxValues = 250_000
)

// budget counts what a file's reader builds, against MaxValues and
// MaxDepth.
type budget struct{ values int }

func (b *budget) take(depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("it nests maps and lists more than %d deep", MaxDepth)
	}
	b.values++
	if b.values > MaxValues {
		return fmt.Errorf("it has more than %d values", MaxValues)
	}
	return nil
}

// Decryptor decrypts for one render with the keys of one Secret and
// remembers what it decrypted, for Redact. It is safe for concurrent use.
type Decryptor struct {
	keys *Keys

	mu sync.Mutex
	// values are the decrypted values seen, for Values and Redact.
	values map[string]bool
}

// New returns a Decryptor with keys.
func New(keys *Keys) *Decryptor {
	return &Decryptor{
		keys:   keys,
		values: map[string]bool{},
	}
}

// Source is File for a file kustomize reads as a generator input or patch
// (render.Decryptor): the format is FormatForPath(formatFrom), or
// EnvFormat(formatFrom) for an env file.
func (d *Decryptor) Source(name string, data []byte, formatFrom string, env bool) ([]byte, bool, error) {
	f := FormatForPath(formatFrom)
	if env {
		f = EnvFormat(formatFrom)
	}
	return d.File(name, data, f)
}

// File returns the plaintext of data, the contents of the file name, when
// it is SOPS-encrypted in format f (FormatForPath, EnvFormat), and whether
// it was; a file without the format's marker is returned as it is.
func (d *Decryptor) File(name string, data []byte, f Format) ([]byte, bool, error) {
	if !encrypted(data, f) {
		return data, false, nil
	}
	out, err := d.decrypt(data, f, f)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return out, true, nil
}

// Object decrypts one rendered object, as Flux does before applying: an
// object with a top-level sops block that holds a mac is decrypted whole
// (through JSON, so the result has no sops block), and each data value of
// a Secret that is itself a SOPS-encrypted file is replaced by its
// plaintext in the format its key names. It returns the object (node
// itself when nothing was encrypted) and whether anything was decrypted.
// name says which object, for errors.
func (d *Decryptor) Object(name string, node *kyaml.RNode) (*kyaml.RNode, bool, error) {
	if hasSOPSBlock(node) {
		j, err := node.MarshalJSON()
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", name, err)
		}
		out, err := d.decrypt(j, JSON, JSON)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", name, err)
		}
		parsed, err := kyaml.Parse(string(out))
		if err != nil {
			return nil, false, fmt.Errorf("%s: the decrypted object does not parse: %w", name, err)
		}
		return parsed, true, nil
	}
	if node.GetKind() != "Secret" {
		return node, false, nil
	}
	data := node.GetDataMap()
	changed := false
	for _, key := range slices.Sorted(maps.Keys(data)) {
		raw, err := base64.StdEncoding.DecodeString(data[key])
		if err != nil {
			continue // not base64: the API server says so at apply
		}
		in, ok := detect(raw)
		if !ok {
			continue
		}
		out, err := d.decrypt(raw, in, FormatForPath(key))
		if err != nil {
			return nil, false, fmt.Errorf("%s data key %q: %w", name, key, err)
		}
		data[key] = base64.StdEncoding.EncodeToString(out)
		changed = true
	}
	if changed {
		node.SetDataMap(data)
	}
	return node, changed, nil
}

func hasSOPSBlock(node *kyaml.RNode) bool {
	s := node.Field("sops")
	if s.IsNilOrEmpty() {
		return false
	}
	mac := s.Value.Field("mac")
	return !mac.IsNilOrEmpty()
}

// Values returns the decrypted values (each at least diff.MinRedactLen
// bytes), for redaction.
func (d *Decryptor) Values() []string {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.values))
	for v := range d.values {
		out = append(out, v)
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// Redact replaces every decrypted value in msg, raw or JSON-escaped, with
// "<redacted>". A nil Decryptor changes nothing.
func (d *Decryptor) Redact(msg string) string {
	for _, v := range d.Values() {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
		if q, _ := json.Marshal(v); len(q) > 2 {
			msg = strings.ReplaceAll(msg, string(q[1:len(q)-1]), "<redacted>")
		}
	}
	return msg
}

func (d *Decryptor) remember(v string) {
	for _, s := range append([]string{v}, strings.Split(v, "\n")...) {
		s = strings.TrimSpace(s)
		if len(s) >= diff.MinRedactLen {
			d.values[s] = true
		}
	}
}

// decrypt is SOPS's decryption of a whole file without the MAC check:
// read the document and its sops metadata, recover the data key with the
// Secret's keys, decrypt the values and print the documents in the output
// format, byte for byte as the SOPS library (v3.13.3) prints them.
func (d *Decryptor) decrypt(data []byte, in, out Format) (plain []byte, err error) {
	defer func() {
		// Hostile input must not take render-controller down. Nothing
		// here is known to panic (the fuzz test calls decryptFile, without
		// this guard); this is the last line of defence.
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("decrypting failed on this input: %v", p)
		}
	}()
	return d.decryptFile(data, in, out)
}

func (d *Decryptor) decryptFile(data []byte, in, out Format) ([]byte, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%d bytes encrypted is more than the %d a SOPS file may have", len(data), MaxFileBytes)
	}
	docs, meta, err := load(data, in)
	if err != nil {
		return nil, fmt.Errorf("not a SOPS-encrypted %s file: %w", in, err)
	}
	key, ok := d.keys.dataKey(meta)
	if !ok {
		return nil, d.noKey(meta)
	}
	var seen []string
	w := walker{rules: meta.rules, key: key, seen: func(s string) { seen = append(seen, s) }}
	for i, doc := range docs {
		if docs[i], err = w.branch(doc, nil, nil); err != nil {
			return nil, fmt.Errorf("decrypting its values failed: %w", err)
		}
	}
	plain, err := emit(docs, out)
	if err != nil {
		return nil, fmt.Errorf("printing the decrypted %s file as %s failed: %w", in, out, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range seen {
		d.remember(v)
	}
	return plain, nil
}

// load reads an encrypted file of format f: its documents, without the
// sops metadata, and the metadata.
func load(data []byte, f Format) ([]branch, fileMeta, error) {
	b := &budget{}
	var (
		docs []branch
		err  error
		mode = flattenNone
	)
	switch f {
	case YAML:
		docs, err = loadYAML(data, b)
	case Dotenv:
		docs, err = loadDotenv(data, b)
		mode = flattenFull
	case INI:
		docs, err = loadINI(data, b)
		mode = flattenBelowTop
	default: // JSON, and binary, which is a JSON envelope once encrypted
		docs, err = loadJSON(data, b)
	}
	if err != nil {
		return nil, fileMeta{}, err
	}
	return extractMetadata(docs, mode, f == INI)
}

func emit(docs []branch, f Format) ([]byte, error) {
	switch f {
	case YAML:
		return emitYAML(docs)
	case JSON:
		return emitJSON(docs)
	case Dotenv:
		return emitDotenv(docs)
	case INI:
		return emitINI(docs)
	default:
		return emitBinary(docs)
	}
}

// noKey says which keys the file wants, none of which the Secret has.
func (d *Decryptor) noKey(m fileMeta) error {
	want := m.wanted()
	if len(want) == 0 {
		return errors.New("it names no master key")
	}
	return fmt.Errorf("no key of Secret %s decrypts it; it is encrypted for %s", d.keys.Secret, strings.Join(want, ", "))
}
