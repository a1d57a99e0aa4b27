package decrypt

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// metadata is a file's sops block, read as the library reads it: the same
// field names, matched the same way (mapstructure, weakly typed, so that
// "2" is a shamir_threshold of 2). Keys of the cloud KMS kinds are read
// only to be named in errors: render-controller decrypts with age and
// OpenPGP keys only, as the Secret holds nothing else.
type metadata struct {
	// The keys of a file with one key group are at the top level, under
	// the names a group of key_groups uses.
	keyGroup                `mapstructure:",squash"`
	ShamirThreshold         int        `mapstructure:"shamir_threshold,omitempty"`
	KeyGroups               []keyGroup `mapstructure:"key_groups,omitempty,deep"`
	LastModified            string     `mapstructure:"lastmodified"`
	MAC                     string     `mapstructure:"mac"`
	UnencryptedSuffix       string     `mapstructure:"unencrypted_suffix,omitempty"`
	EncryptedSuffix         string     `mapstructure:"encrypted_suffix,omitempty"`
	UnencryptedRegex        string     `mapstructure:"unencrypted_regex,omitempty"`
	EncryptedRegex          string     `mapstructure:"encrypted_regex,omitempty"`
	UnencryptedCommentRegex string     `mapstructure:"unencrypted_comment_regex,omitempty"`
	EncryptedCommentRegex   string     `mapstructure:"encrypted_comment_regex,omitempty"`
	MACOnlyEncrypted        bool       `mapstructure:"mac_only_encrypted,omitempty"`
	Version                 string     `mapstructure:"version"`
}

type keyGroup struct {
	PGPKeys           []pgpKey   `mapstructure:"pgp,omitempty,deep"`
	KMSKeys           []kmsKey   `mapstructure:"kms,omitempty,deep"`
	GCPKMSKeys        []gcpKey   `mapstructure:"gcp_kms,omitempty,deep"`
	HCKmsKeys         []hckmsKey `mapstructure:"hckms,omitempty,deep"`
	AzureKeyVaultKeys []azkvKey  `mapstructure:"azure_kv,omitempty,deep"`
	VaultKeys         []vaultKey `mapstructure:"hc_vault,deep"`
	AgeKeys           []ageKey   `mapstructure:"age,deep"`
}

type pgpKey struct {
	CreatedAt        string `mapstructure:"created_at"`
	EncryptedDataKey string `mapstructure:"enc"`
	Fingerprint      string `mapstructure:"fp"`
}

type ageKey struct {
	Recipient        string `mapstructure:"recipient"`
	EncryptedDataKey string `mapstructure:"enc"`
}

// The cloud keys, with the fields the library reads (so that a file the
// library reads, this reads too); only their names are used, in errors.
type kmsKey struct {
	Arn        string             `mapstructure:"arn"`
	Role       string             `mapstructure:"role,omitempty"`
	Context    map[string]*string `mapstructure:"context,omitempty"`
	CreatedAt  string             `mapstructure:"created_at"`
	Enc        string             `mapstructure:"enc"`
	AwsProfile string             `mapstructure:"aws_profile"`
}

type gcpKey struct {
	ResourceID string `mapstructure:"resource_id"`
	CreatedAt  string `mapstructure:"created_at"`
	Enc        string `mapstructure:"enc"`
}

type vaultKey struct {
	VaultAddress string `mapstructure:"vault_address"`
	EnginePath   string `mapstructure:"engine_path"`
	KeyName      string `mapstructure:"key_name"`
	CreatedAt    string `mapstructure:"created_at"`
	Enc          string `mapstructure:"enc"`
}

type azkvKey struct {
	VaultURL  string `mapstructure:"vault_url"`
	Name      string `mapstructure:"name"`
	Version   string `mapstructure:"version"`
	CreatedAt string `mapstructure:"created_at"`
	Enc       string `mapstructure:"enc"`
}

type hckmsKey struct {
	KeyID     string `mapstructure:"key_id"`
	CreatedAt string `mapstructure:"created_at"`
	Enc       string `mapstructure:"enc"`
}

// cloudKey is a key of a kind render-controller cannot use: its kind and
// name, and its creation time, which must parse as in the library.
type cloudKey struct{ kind, name, createdAt string }

func (g keyGroup) cloudKeys() []cloudKey {
	var out []cloudKey
	for _, k := range g.KMSKeys {
		out = append(out, cloudKey{"AWS KMS", k.Arn, k.CreatedAt})
	}
	for _, k := range g.GCPKMSKeys {
		out = append(out, cloudKey{"GCP KMS", k.ResourceID, k.CreatedAt})
	}
	for _, k := range g.HCKmsKeys {
		out = append(out, cloudKey{"HuaweiCloud KMS", k.KeyID, k.CreatedAt})
	}
	for _, k := range g.AzureKeyVaultKeys {
		out = append(out, cloudKey{"Azure Key Vault", k.VaultURL + "/keys/" + k.Name, k.CreatedAt})
	}
	for _, k := range g.VaultKeys {
		out = append(out, cloudKey{"Vault", k.VaultAddress + "/v1/" + k.EnginePath + "/keys/" + k.KeyName, k.CreatedAt})
	}
	return out
}

// masterKeys are one key group: all encrypt the same data key (or the
// same Shamir share of it). They are tried as the library tries them: age
// first, then OpenPGP, each in file order.
type masterKeys struct {
	age []ageKey
	pgp []pgpKey
	// others names the keys of kinds render-controller cannot use.
	others []string
}

// fileMeta is what decryption needs from a file's sops block.
type fileMeta struct {
	groups    []masterKeys
	threshold int
	rules     rules
}

// flatten says where a format keeps its sops block: a nested map (YAML,
// JSON), a section of flattened keys (INI), or top-level sops_ keys
// (dotenv).
type flatten int

const (
	flattenNone flatten = iota
	flattenBelowTop
	flattenFull
)

const (
	sopsKey    = "sops"
	sopsPrefix = "sops_"
)

var errNoMetadata = errors.New("it has no sops metadata")

// extractMetadata removes the sops block from the documents and reads it.
// Like the library, it takes the block of the first document only and
// drops one in any other.
func extractMetadata(docs []branch, mode flatten, escapeNewlines bool) ([]branch, fileMeta, error) {
	var block branch
	found := false
	if mode != flattenFull {
		for bi, b := range docs {
			kept := b[:0]
			for _, it := range b {
				if k, ok := it.key.(string); !ok || k != sopsKey {
					kept = append(kept, it)
					continue
				}
				if bi == 0 {
					if found {
						return nil, fileMeta{}, fmt.Errorf("it has more than one %s entry", sopsKey)
					}
					found = true
					m, ok := it.value.(branch)
					if !ok {
						return nil, fileMeta{}, fmt.Errorf("its %s entry is not a mapping", sopsKey)
					}
					block = m
				}
			}
			docs[bi] = kept
		}
		// An empty sops mapping of a JSON file is no block at all, as in
		// the library (whose JSON reader gives it no items).
		found = found && block != nil
	} else if len(docs) > 0 {
		kept := docs[0][:0]
		for _, it := range docs[0] {
			if k, ok := it.key.(string); ok && strings.HasPrefix(k, sopsPrefix) {
				block = append(block, item{key: k[len(sopsPrefix):], value: it.value})
				found = true
				continue
			}
			kept = append(kept, it)
		}
		docs[0] = kept
	}
	if !found {
		return nil, fileMeta{}, errNoMetadata
	}
	if mode != flattenNone {
		if escapeNewlines {
			for i, it := range block {
				if s, ok := it.value.(string); ok {
					block[i].value = strings.ReplaceAll(s, `\n`, "\n")
				}
			}
		}
		var err error
		if block, err = unflatten(block); err != nil {
			return nil, fileMeta{}, err
		}
	}
	var md metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &md, WeaklyTypedInput: true})
	if err != nil {
		return nil, fileMeta{}, err
	}
	plain, err := toGo(block)
	if err != nil {
		return nil, fileMeta{}, err
	}
	if err := dec.Decode(plain); err != nil {
		return nil, fileMeta{}, fmt.Errorf("its sops metadata does not read: %v", err)
	}
	meta, err := md.read()
	return docs, meta, err
}

// toGo is a branch as Go maps and slices, without comments, for
// mapstructure.
func toGo(v any) (any, error) {
	switch v := v.(type) {
	case branch:
		m := make(map[string]any, len(v))
		for _, it := range v {
			if _, ok := it.key.(comment); ok {
				continue
			}
			k, ok := it.key.(string)
			if !ok {
				return nil, fmt.Errorf("its sops metadata has a key of type %T", it.key)
			}
			x, err := toGo(it.value)
			if err != nil {
				return nil, err
			}
			m[k] = x
		}
		return m, nil
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			if _, ok := x.(comment); ok {
				continue
			}
			y, err := toGo(x)
			if err != nil {
				return nil, err
			}
			out = append(out, y)
		}
		return out, nil
	}
	return v, nil
}

func (md *metadata) read() (fileMeta, error) {
	if _, err := time.Parse(time.RFC3339, md.LastModified); err != nil {
		return fileMeta{}, fmt.Errorf("its sops lastmodified is not a time: %v", err)
	}
	var groups []masterKeys
	var err error
	switch {
	case md.keyGroup.size() > 0:
		groups, err = readGroups([]keyGroup{md.keyGroup})
	case len(md.KeyGroups) > 0:
		if len(md.KeyGroups) > MaxKeyGroups {
			return fileMeta{}, fmt.Errorf("it has %d key groups, more than %d", len(md.KeyGroups), MaxKeyGroups)
		}
		groups, err = readGroups(md.KeyGroups)
	default:
		return fileMeta{}, fmt.Errorf("its sops metadata names no key")
	}
	if err != nil {
		return fileMeta{}, err
	}
	set := 0
	for _, r := range []string{md.UnencryptedSuffix, md.EncryptedSuffix, md.UnencryptedRegex, md.EncryptedRegex, md.UnencryptedCommentRegex, md.EncryptedCommentRegex} {
		if r != "" {
			set++
		}
	}
	if set > 1 {
		return fileMeta{}, fmt.Errorf("its sops metadata sets more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex and unencrypted_comment_regex")
	}
	r := rules{
		unencryptedSuffix:       md.UnencryptedSuffix,
		encryptedSuffix:         md.EncryptedSuffix,
		unencryptedRegex:        compileRule(md.UnencryptedRegex),
		encryptedRegex:          compileRule(md.EncryptedRegex),
		unencryptedCommentRegex: compileRule(md.UnencryptedCommentRegex),
		encryptedCommentRegex:   compileRule(md.EncryptedCommentRegex),
	}
	if set == 0 {
		r.unencryptedSuffix = "_unencrypted"
	}
	return fileMeta{groups: groups, threshold: md.ShamirThreshold, rules: r}, nil
}

func (g keyGroup) size() int {
	return len(g.PGPKeys) + len(g.KMSKeys) + len(g.GCPKMSKeys) + len(g.HCKmsKeys) + len(g.AzureKeyVaultKeys) + len(g.VaultKeys) + len(g.AgeKeys)
}

// readGroups checks the keys as the library does when it loads them (a
// creation time that is not RFC 3339 is an error) and bounds their number.
func readGroups(in []keyGroup) ([]masterKeys, error) {
	var out []masterKeys
	n := 0
	for _, g := range in {
		n += g.size()
		if n > MaxMasterKeys {
			return nil, fmt.Errorf("it names more than %d master keys", MaxMasterKeys)
		}
		var mk masterKeys
		for _, k := range g.cloudKeys() {
			if _, err := time.Parse(time.RFC3339, k.createdAt); err != nil {
				return nil, fmt.Errorf("a %s key's created_at is not a time: %v", k.kind, err)
			}
			mk.others = append(mk.others, k.kind+" "+k.name)
		}
		for _, k := range g.PGPKeys {
			if _, err := time.Parse(time.RFC3339, k.CreatedAt); err != nil {
				return nil, fmt.Errorf("an OpenPGP key's created_at is not a time: %v", err)
			}
		}
		mk.pgp, mk.age = g.PGPKeys, g.AgeKeys
		out = append(out, mk)
	}
	return out, nil
}

// unflatten rebuilds the nested sops block of an INI or dotenv file from
// its flattened keys: a__map_b is key b of map a, a__list_0 item 0 of list
// a. Maps come out in key order.
func unflatten(flat branch) (branch, error) {
	root := &flatNode{}
	for _, it := range flat {
		if _, ok := it.key.(comment); ok {
			continue
		}
		k, ok := it.key.(string)
		if !ok {
			return nil, fmt.Errorf("its sops metadata has a key of type %T", it.key)
		}
		n := root
		for _, t := range tokenize(k) {
			n = n.child(t)
		}
		if n.set {
			return nil, fmt.Errorf("its sops metadata has %q twice", k)
		}
		n.set, n.value = true, it.value
	}
	out, err := root.build()
	if err != nil {
		return nil, fmt.Errorf("its sops metadata does not unflatten: %w", err)
	}
	b, ok := out.(branch)
	if !ok {
		return nil, fmt.Errorf("its sops metadata does not unflatten to a map")
	}
	return b, nil
}

const (
	mapSeparator  = "__map_"
	listSeparator = "__list_"
)

// token is one step of a flattened key: a map key, or a list index when
// isIndex.
type token struct {
	key     string
	index   int
	isIndex bool
}

// tokenize splits a flattened key at each separator. An index that is not
// a number is 0, as in the library.
func tokenize(path string) []token {
	var out []token
	start, sep := 0, ""
	finish := func(end int) {
		body := path[start+len(sep) : end]
		if sep == listSeparator {
			n, _ := strconv.Atoi(body)
			out = append(out, token{index: n, isIndex: true})
		} else {
			out = append(out, token{key: body})
		}
		start = end
	}
	for i := 0; i < len(path); {
		switch {
		case strings.HasPrefix(path[i:], mapSeparator):
			finish(i)
			sep = mapSeparator
			i += len(mapSeparator)
		case strings.HasPrefix(path[i:], listSeparator):
			finish(i)
			sep = listSeparator
			i += len(listSeparator)
		default:
			i++
		}
	}
	finish(len(path))
	return out
}

type flatNode struct {
	set     bool
	value   any
	keys    map[string]*flatNode
	indices map[int]*flatNode
}

func (n *flatNode) child(t token) *flatNode {
	if t.isIndex {
		if n.indices == nil {
			n.indices = map[int]*flatNode{}
		}
		if n.indices[t.index] == nil {
			n.indices[t.index] = &flatNode{}
		}
		return n.indices[t.index]
	}
	if n.keys == nil {
		n.keys = map[string]*flatNode{}
	}
	if n.keys[t.key] == nil {
		n.keys[t.key] = &flatNode{}
	}
	return n.keys[t.key]
}

func (n *flatNode) build() (any, error) {
	kinds := 0
	for _, has := range []bool{n.set, len(n.keys) > 0, len(n.indices) > 0} {
		if has {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, fmt.Errorf("a key is both a value and a map or list")
	case n.set:
		return n.value, nil
	case len(n.indices) > 0:
		lo, hi := math.MaxInt, math.MinInt
		for i := range n.indices {
			lo, hi = min(lo, i), max(hi, i)
		}
		if lo != 0 || hi+1 != len(n.indices) {
			return nil, fmt.Errorf("a list misses items")
		}
		out := make([]any, len(n.indices))
		for i, c := range n.indices {
			v, err := c.build()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	names := make([]string, 0, len(n.keys))
	for k := range n.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(branch, len(names))
	for i, k := range names {
		v, err := n.keys[k].build()
		if err != nil {
			return nil, err
		}
		out[i] = item{key: k, value: v}
	}
	return out, nil
}
