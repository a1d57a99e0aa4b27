package v2

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// ConfigDigest is the value of ArtifactConfigDigestKey and of a history
// entry's configDigest: "sha256:<hex>" of the JSON of a release's user
// values, keys sorted as encoding/json writes maps; nil and empty values
// have the digest of {}. It lives beside the key so that render-controller
// (which renders the values) and sync-controller (which adopts a release
// made by the helm CLI and never links the chart renderer) compute one
// digest the same way.
func ConfigDigest(values map[string]any) string {
	j, err := ConfigJSON(values)
	if err != nil {
		// Values that do not encode as JSON cannot come from the API;
		// their digest is that of the error, so it is stable.
		j = []byte(err.Error())
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(j))
}

// ConfigJSON is the JSON ConfigDigest hashes: {} for nil values.
func ConfigJSON(values map[string]any) ([]byte, error) {
	if values == nil {
		values = map[string]any{}
	}
	return json.Marshal(values)
}
