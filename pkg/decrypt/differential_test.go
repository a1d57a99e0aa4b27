package decrypt_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/decrypt/decrypttest"
)

// The differential tests encrypt with the SOPS library and check that
// decrypt prints exactly what the library prints for the same file, in
// every output format, with every rule of which values are encrypted, and
// for keys in several groups with a Shamir threshold.

// richFiles are plaintexts of each format with the values the rules pick
// out (password, public, token under comments, *_secret,
// *_unencrypted), every value type, comments, nesting, unicode, empty
// values and, for YAML, several documents.
var richFiles = []struct {
	name, plain string
}{
	{"rich.yaml", `# head comment of the file
app:
    name: demo # inline comment
    password: s3cr3t-yaml-ü
    # sops:plain
    public: visible
    # sops:enc
    token: abc
    api_secret: xyz
    note_unencrypted: clear
    count: 42
    negative: -7
    ratio: 3.25
    huge: 1e300
    enabled: true
    disabled: false
    nothing: null
    tilde: ~
    empty: ""
    when: !!timestamp 2024-01-02T03:04:05Z
    datestr: 2024-01-02
    blob: !!binary aGVsbG8=
    multi: |
        line one
        line two
    folded: >
        folded
        text
    list:
        # before the first item
        - one
        - 2 # two
        - {nested: map, password: inner}
        - [x, y]
        # after the last item
    anchors:
        base: &b {k: v}
        copy: *b
    emptymap: {}
    emptylist: []
unicode: "日本語 ✓ \u00e9"
quoted: 'it''s'
# foot comment of the document
---
second: document
password: other-doc
---
# a document of comments only
`},
	{"rich.json", `{"app": {"name": "demo", "password": "s3cr3t-json-ü", "public": "visible", "api_secret": "xyz",
 "note_unencrypted": "clear", "count": 42, "negative": -7, "ratio": 3.25, "huge": 12345678901234567890, "exp": 1e300,
 "enabled": true, "disabled": false, "nothing": null, "empty": "", "html": "<a&b>",
 "escapes": "tab\there \"q\" \\ \u0001 \u2028", "list": [1, "two", {"password": "inner"}, [], {}, null, 2.5],
 "emptymap": {}}, "unicode": "日本語 ✓", "dup": 1, "dup": 2}`},
	{"rich.env", `# a comment line
# sops:plain
PUBLIC=visible
PASSWORD=s3cr3t-env-ü
# sops:enc
TOKEN=abc
API_secret=xyz
NOTE_unencrypted=clear
EMPTY=
WITH_EQ=a=b=c
MULTI=line1\nline2
SPACES=  padded  
UNICODE=日本語 ✓
`},
	{"rich.ini", `; a comment for the first section
[app]
name = demo
password = s3cr3t-ini-ü
# sops:plain
public = visible
api_secret = xyz
note_unencrypted = clear
empty =
quoted = "a quoted value"
unicode = 日本語 ✓

[other]
password = other-section
`},
	{"rich.bin", "\x00\x01 binary ✓ \xff\n-----BEGIN KEY-----\nbinary-password\n-----END KEY-----\n"},
}

// ruleOptions are the rules of which values are encrypted, one at a time
// as SOPS allows.
var ruleOptions = []struct {
	name string
	opts decrypttest.Options
}{
	{"default", decrypttest.Options{}},
	{"unencrypted_suffix", decrypttest.Options{UnencryptedSuffix: "_secret"}},
	{"encrypted_suffix", decrypttest.Options{EncryptedSuffix: "_secret"}},
	{"unencrypted_regex", decrypttest.Options{UnencryptedRegex: "(?i)^(public|note.*)$"}},
	{"encrypted_regex", decrypttest.Options{EncryptedRegex: "(?i)^(password|list|data)$"}},
	{"unencrypted_comment_regex", decrypttest.Options{UnencryptedCommentRegex: "sops:plain"}},
	{"encrypted_comment_regex", decrypttest.Options{EncryptedCommentRegex: "sops:enc"}},
	{"mac_only_encrypted", decrypttest.Options{MACOnlyEncrypted: true, EncryptedRegex: "(?i)^password$"}},
}

var allFormats = []decrypt.Format{decrypt.YAML, decrypt.JSON, decrypt.Dotenv, decrypt.INI, decrypt.Binary}

// keySetup is who a file is encrypted for and which keys the Secret
// holds; decrypts says whether they suffice.
type keySetup struct {
	name     string
	to       decrypttest.Recipients
	opts     decrypttest.Options // Groups and ShamirThreshold only
	secret   map[string][]byte
	decrypts bool
}

func keySetups(t *testing.T) []keySetup {
	age1, age2 := decrypttest.NewAgeKey(t), decrypttest.NewAgeKey(t)
	pgp1 := decrypttest.NewPGPKey(t, "flux")
	ages := func(ks ...decrypttest.AgeKey) decrypttest.Recipients { return decrypttest.Recipients{Age: ks} }
	groups := []decrypttest.Recipients{ages(age1), {PGP: []decrypttest.PGPKey{pgp1}}, ages(age2)}
	return []keySetup{
		{name: "age", to: ages(age1), secret: map[string][]byte{"a.agekey": []byte(age1.Identity)}, decrypts: true},
		{name: "openpgp", to: decrypttest.Recipients{PGP: []decrypttest.PGPKey{pgp1}}, secret: map[string][]byte{"p.asc": []byte(pgp1.Private)}, decrypts: true},
		{name: "age-and-openpgp-secret-has-openpgp",
			to:     decrypttest.Recipients{Age: []decrypttest.AgeKey{age2}, PGP: []decrypttest.PGPKey{pgp1}},
			secret: map[string][]byte{"p.asc": []byte(pgp1.Private), "other.agekey": []byte(age1.Identity)}, decrypts: true},
		{name: "three-groups-threshold-2",
			opts:   decrypttest.Options{Groups: groups, ShamirThreshold: 2},
			secret: map[string][]byte{"a.agekey": []byte(age1.Identity + age2.Identity)}, decrypts: true},
		{name: "three-groups-threshold-3-two-keys",
			opts:   decrypttest.Options{Groups: groups, ShamirThreshold: 3},
			secret: map[string][]byte{"a.agekey": []byte(age1.Identity + age2.Identity)}},
	}
}

func TestDecryptionPrintsWhatTheSOPSLibraryPrints(t *testing.T) {
	compared := 0
	for _, ks := range keySetups(t) {
		keys, err := decrypt.ParseKeys("apps/sops-keys", ks.secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range ruleOptions {
			for _, f := range richFiles {
				opts := rule.opts
				opts.Groups, opts.ShamirThreshold = ks.opts.Groups, ks.opts.ShamirThreshold
				enc := decrypttest.Encrypt(t, f.name, []byte(f.plain), ks.to, opts)
				in := decrypt.FormatForPath(f.name)
				for _, out := range allFormats {
					name := fmt.Sprintf("%s/%s/%s-as-%s", ks.name, rule.name, f.name, out)
					want, wantErr := libraryDecrypt(keys, enc, in, out)
					got, err := decrypt.New(keys).DecryptFile(enc, in, out)
					if (err == nil) != (wantErr == nil) {
						t.Errorf("%s: error %v, the library's %v", name, err, wantErr)
						continue
					}
					if in == out && (err == nil) != ks.decrypts {
						t.Errorf("%s: error %v, want decrypting %v", name, err, ks.decrypts)
					}
					if err != nil {
						continue
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s: printed\n%q\nthe library printed\n%q", name, got, want)
					}
					compared++
				}
			}
		}
	}
	// 4 key setups that decrypt, 8 rules, 5 files each printed at least
	// as itself: a vacuous run fails here.
	if compared < 4*8*5 {
		t.Fatalf("only %d outputs compared", compared)
	}
	t.Logf("%d outputs byte-identical to the library's", compared)
}

// ageSetup makes an age key and the keys of a Secret holding it.
func ageSetup(t *testing.T) (decrypttest.Recipients, *decrypt.Keys) {
	t.Helper()
	key := decrypttest.NewAgeKey(t)
	keys, err := decrypt.ParseKeys("apps/k", map[string][]byte{"k.agekey": []byte(key.Identity)})
	if err != nil {
		t.Fatal(err)
	}
	return decrypttest.Recipients{Age: []decrypttest.AgeKey{key}}, keys
}

func TestObjectDecryptsAsTheSOPSLibraryDoes(t *testing.T) {
	to, keys := ageSetup(t)
	manifest := decrypttest.Encrypt(t, "secret.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: apps
  labels: {app: db}
type: Opaque
stringData:
  password: manifest-ü-9
  port: "5432"
data:
  raw: aGVsbG8=
`), to, decrypttest.Options{EncryptedRegex: "^(data|stringData)$"})

	t.Run("a manifest with a sops block", func(t *testing.T) {
		node, err := kyaml.Parse(string(manifest))
		if err != nil {
			t.Fatal(err)
		}
		j, err := node.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lib, err := libraryDecrypt(keys, j, decrypt.JSON, decrypt.JSON)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kyaml.Parse(string(lib))
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := decrypt.New(keys).Object("Secret apps/db", node)
		if err != nil || !ok {
			t.Fatalf("Object = %v, %v", ok, err)
		}
		if got.MustString() != want.MustString() {
			t.Fatalf("Object gave\n%s\nthe library\n%s", got.MustString(), want.MustString())
		}
	})

	t.Run("Secret data values that are SOPS files", func(t *testing.T) {
		// Each data key names the format its value is printed in; the
		// value is a file encrypted in the format of rich file from.
		values := map[string]string{"app.env": "rich.env", "config.yaml": "rich.yaml", "config.ini": "rich.ini",
			"config.json": "rich.json", "blob": "rich.bin", "from-yaml.json": "rich.yaml", "from-json.yaml": "rich.json"}
		plain := map[string]string{}
		for _, f := range richFiles {
			plain[f.name] = f.plain
		}
		data := map[string]string{}
		want := map[string][]byte{}
		for key, from := range values {
			enc := decrypttest.Encrypt(t, from, []byte(plain[from]), to, decrypttest.Options{})
			data[key] = base64.StdEncoding.EncodeToString(enc)
			w, err := libraryDecrypt(keys, enc, decrypt.FormatForPath(from), decrypt.FormatForPath(key))
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			want[key] = w
		}
		node, err := kyaml.Parse("apiVersion: v1\nkind: Secret\nmetadata:\n  name: gen\n")
		if err != nil {
			t.Fatal(err)
		}
		node.SetDataMap(data)
		got, ok, err := decrypt.New(keys).Object("Secret apps/gen", node)
		if err != nil || !ok {
			t.Fatalf("Object = %v, %v", ok, err)
		}
		gotData := got.GetDataMap()
		for key := range values {
			b, err := base64.StdEncoding.DecodeString(gotData[key])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want[key]) {
				t.Errorf("data %s:\n%q\nthe library:\n%q", key, b, want[key])
			}
		}
	})
}

func TestHostileFilesFailWithAClearError(t *testing.T) {
	_, keys := ageSetup(t)
	sopsBlock := func(extra string) string {
		return "sops:\n  mac: ENC[AES256_GCM,data:x,iv:x,tag:x,type:str]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n" + extra
	}
	nested := strings.Repeat("[", decrypt.MaxDepth+5) + strings.Repeat("]", decrypt.MaxDepth+5)
	var groups strings.Builder
	groups.WriteString("  key_groups:\n")
	for range decrypt.MaxKeyGroups + 1 {
		groups.WriteString("    - age: [{recipient: age1x, enc: x}]\n")
	}
	var laughs strings.Builder
	laughs.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	prev := "a"
	for i := range 8 {
		name := fmt.Sprintf("l%d", i)
		fmt.Fprintf(&laughs, "%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	for _, tc := range []struct {
		name, in string
		format   decrypt.Format
		want     string
	}{
		{"too large", "mac: ENC[" + strings.Repeat("x", decrypt.MaxFileBytes), decrypt.YAML, "more than the"},
		{"too deep (JSON)", `{"a": ` + nested + `, "sops": {"mac": "ENC["}}`, decrypt.JSON, "deep"},
		{"too deep (YAML)", "a: " + nested + "\n" + sopsBlock(""), decrypt.YAML, "deep"},
		{"too many values (aliases in a second document)", sopsBlock("") + "---\n" + laughs.String(), decrypt.YAML, "values"},
		{"too many key groups", sopsBlock(groups.String()), decrypt.YAML, "key groups"},
		{"no sops metadata", "a: b\nmac: ENC[\n", decrypt.YAML, "no sops metadata"},
		{"not YAML", "mac: ENC[\n\t- :", decrypt.YAML, "not a SOPS-encrypted YAML file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decrypt.New(keys).File("f", []byte(tc.in), tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
