package decrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"plumb.dev/pkg/diff"
)

func init() {
	// The library logs every recovered data key at info level and, at
	// warning level, comments it took for unencrypted; render-controller's
	// log says what failed itself.
	logging.SetLevel(logrus.ErrorLevel)
}

// Format is a SOPS file format: how a file's encrypted values are laid
// out.
type Format = formats.Format

// The formats, as SOPS names them.
const (
	Binary = formats.Binary
	Dotenv = formats.Dotenv
	INI    = formats.Ini
	JSON   = formats.Json
	YAML   = formats.Yaml
)

// FormatForPath is SOPS's rule, by extension: .yaml and .yml, .json, .env,
// .ini, anything else binary; and, as in Flux, a name ending in
// .dockerconfigjson is JSON.
func FormatForPath(name string) Format {
	if strings.HasSuffix(name, ".dockerconfigjson") {
		return JSON
	}
	return formats.FormatForPath(name)
}

// EnvFormat is the format of a generator's env file: by extension, with
// dotenv for any name SOPS would call binary (Flux's rule).
func EnvFormat(name string) Format {
	if f := FormatForPath(name); f != Binary {
		return f
	}
	return Dotenv
}

// markers are text only a SOPS-encrypted file of the format holds (Flux's
// markers): a file without its format's marker is left as it is.
var markers = []struct {
	format Format
	marker string
}{
	{YAML, "mac: ENC["},
	{JSON, `"mac": "ENC[`},
	{Dotenv, "sops_mac=ENC["},
	{INI, "[sops]"},
	// A binary file is a JSON envelope once encrypted.
	{Binary, `"mac": "ENC[`},
}

func encrypted(data []byte, f Format) bool {
	for _, m := range markers {
		if m.format == f && bytes.Contains(data, []byte(m.marker)) {
			return true
		}
	}
	return false
}

// detect returns the format of a SOPS-encrypted value by its marker.
func detect(data []byte) (Format, bool) {
	for _, m := range markers {
		if bytes.Contains(data, []byte(m.marker)) {
			return m.format, true
		}
	}
	return 0, false
}

// Bounds on what is decrypted.
const (
	// MaxFileBytes bounds one encrypted file or object (Flux's bound).
	MaxFileBytes = 5 << 20
	// MaxMasterKeys bounds the master keys one file names: each is a try.
	MaxMasterKeys = 64
)

// Decryptor decrypts for one render with the keys of one Secret and
// remembers what it decrypted, for Redact. It is safe for concurrent use.
type Decryptor struct {
	keys    *Keys
	clients []keyservice.KeyServiceClient

	mu sync.Mutex
	// values are the decrypted values seen, for Values and Redact.
	values map[string]bool
}

// New returns a Decryptor with keys.
func New(keys *Keys) *Decryptor {
	return &Decryptor{
		keys:    keys,
		clients: []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(keyServer{keys: keys})},
		values:  map[string]bool{},
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
// load the tree, recover the data key with the Secret's keys, decrypt
// every value and print the tree in the output format.
func (d *Decryptor) decrypt(data []byte, in, out Format) (plain []byte, err error) {
	defer func() {
		// Hostile input has made the SOPS stores panic (Flux saw it too).
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("SOPS failed on this input: %v", p)
		}
	}()
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%d bytes encrypted is more than the %d a SOPS file may have", len(data), MaxFileBytes)
	}
	tree, err := StoreFor(in).LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("not a SOPS-encrypted %s file: %s", formatName(in), userError(err))
	}
	n := 0
	for _, g := range tree.Metadata.KeyGroups {
		n += len(g)
	}
	if n > MaxMasterKeys {
		return nil, fmt.Errorf("it names %d master keys, more than %d", n, MaxMasterKeys)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices(d.clients, nil)
	if err != nil {
		return nil, d.noKey(tree.Metadata)
	}
	before := leaves(tree.Branches)
	if _, err := tree.Decrypt(key, aes.NewCipher()); err != nil {
		return nil, fmt.Errorf("decrypting its values failed: %s", userError(err))
	}
	after := leaves(tree.Branches)
	plain, err = StoreFor(out).EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("printing the decrypted %s file as %s failed: %s", formatName(in), formatName(out), userError(err))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, v := range before {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "ENC[") && i < len(after) {
			if b, err := sops.ToBytes(after[i]); err == nil {
				d.remember(string(b))
			}
		}
	}
	return plain, nil
}

// noKey says which keys the file wants, none of which the Secret has.
func (d *Decryptor) noKey(m sops.Metadata) error {
	var want []string
	for _, g := range m.KeyGroups {
		for _, k := range g {
			want = append(want, k.TypeToIdentifier()+" "+k.ToString())
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("it names no master key")
	}
	return fmt.Errorf("no key of Secret %s decrypts it; it is encrypted for %s", d.keys.Secret, strings.Join(want, ", "))
}

// leaves lists the leaf values of a tree in walk order.
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case sops.TreeBranch:
			for _, item := range v {
				walk(item.Value)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		default:
			out = append(out, v)
		}
	}
	for _, b := range branches {
		walk(b)
	}
	return out
}

// StoreFor is the SOPS store that reads and prints files of format f
// (decrypttest encrypts with it too).
func StoreFor(f Format) sops.Store {
	switch f {
	case YAML:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case JSON:
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case Dotenv:
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	case INI:
		return ini.NewStore(&config.INIStoreConfig{})
	default:
		return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
}

func formatName(f Format) string {
	switch f {
	case YAML:
		return "YAML"
	case JSON:
		return "JSON"
	case Dotenv:
		return "dotenv"
	case INI:
		return "INI"
	default:
		return "binary"
	}
}

// userError is the library's short message where it has one.
func userError(err error) string {
	var u sops.UserError
	if errors.As(err, &u) {
		return u.UserError()
	}
	return err.Error()
}
