package decrypt

import (
	"bytes"
	"strings"
)

// Format is a SOPS file format: how a file's encrypted values and its
// sops metadata are laid out.
type Format int

// The formats, numbered as SOPS numbers them.
const (
	Binary Format = iota
	Dotenv
	INI
	JSON
	YAML
)

// FormatForPath is SOPS's rule, by extension: .yaml and .yml, .json, .env,
// .ini, anything else binary; and, as in Flux, a name ending in
// .dockerconfigjson is JSON.
func FormatForPath(name string) Format {
	switch {
	case strings.HasSuffix(name, ".dockerconfigjson"), strings.HasSuffix(name, ".json"):
		return JSON
	case strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
		return YAML
	case strings.HasSuffix(name, ".env"):
		return Dotenv
	case strings.HasSuffix(name, ".ini"):
		return INI
	}
	return Binary
}

// EnvFormat is the format of a generator's env file: by extension, with
// dotenv for any name SOPS would call binary (Flux's rule).
func EnvFormat(name string) Format {
	if f := FormatForPath(name); f != Binary {
		return f
	}
	return Dotenv
}

func (f Format) String() string {
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
