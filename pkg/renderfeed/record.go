package renderfeed

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/api/meta"
)

// Path is where the artifact server serves the feed.
const Path = "/renders"

// MaxRecordBytes bounds one record's line, its newline included: a
// render's artifact (a URL, a digest, a revision, a few metadata entries)
// and its message take a few hundred bytes; a render whose record would
// be larger is written to status by render-controller as before.
const MaxRecordBytes = 4096

// Record is one line of the feed: the newest render of one object, or,
// with Withdrawn, word that render-controller wrote its status itself (a
// failure, or a render no subscriber took within the grace) and that no
// earlier record of it may be used.
type Record struct {
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	Generation int64     `json:"generation"`
	// Artifact is status.renderedArtifact as render-controller would write
	// it, and Message the Rendered condition's message.
	Artifact  *meta.Artifact `json:"artifact,omitempty"`
	Message   string         `json:"message,omitempty"`
	Withdrawn bool           `json:"withdrawn,omitempty"`
}

// Key is the record's object.
func (r *Record) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// encode is the record's line, newline included; an error when it is
// larger than MaxRecordBytes.
func (r *Record) encode() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("the render record of %s %s is %d bytes, more than %d", r.Kind, r.Key(), len(b), MaxRecordBytes)
	}
	return b, nil
}

// check says what is wrong with a record read from the feed at origin
// (scheme://host of the feed's URL), nil when nothing is: it names an
// object, and a render whose artifact is served under origin.
func (r *Record) check(origin string) error {
	if r.Kind == "" || r.Namespace == "" || r.Name == "" || r.UID == "" || r.Generation <= 0 {
		return errors.New("a render record must name its object's kind, namespace, name, UID and generation")
	}
	if r.Withdrawn {
		return nil
	}
	if r.Artifact == nil || r.Artifact.Digest == "" || r.Artifact.Revision == "" {
		return fmt.Errorf("the render record of %s %s has no artifact digest or revision", r.Kind, r.Key())
	}
	if !strings.HasPrefix(r.Artifact.URL, origin+"/") {
		return fmt.Errorf("the render record of %s %s names artifact URL %q, not under the feed's address %s", r.Kind, r.Key(), r.Artifact.URL, origin)
	}
	return nil
}
