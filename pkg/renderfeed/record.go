package renderfeed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// MaxReplaces bounds Record.Replaces: render-controller names at most two
// render statuses (its own last write and the one it read).
const MaxReplaces = 4

// Record is one line of the feed: the newest render of one object, or,
// with Withdrawn, word that render-controller wrote its status itself (a
// failure, or a render no subscriber took within the grace) and that no
// earlier record of it may be used.
//
// The wire format grows by fields that may be absent: a reader ignores a
// field it does not know (encoding/json), and a field a writer of the
// previous version leaves out reads as its zero value, which keeps that
// version's rule. Replaces is such a field (docs/design/render-feed.md,
// "Versions").
type Record struct {
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	Generation int64     `json:"generation"`
	// Artifact is status.renderedArtifact as render-controller would write
	// it, and Message the Rendered condition's message.
	Artifact *meta.Artifact `json:"artifact,omitempty"`
	Message  string         `json:"message,omitempty"`
	// Replaces names, by StatusDigest, the render statuses of the object
	// this render is newer than: render-controller's last write of its
	// own and the status its reconcile read. sync-controller takes the
	// record only over one of them (or over a render it wrote itself from
	// an earlier record): any other stored status is a write of
	// render-controller's made after the offer, whose withdrawal of this
	// record is still on its way. Empty (a render-controller of the
	// previous version): taken as that version's rule says.
	Replaces  []string `json:"replaces,omitempty"`
	Withdrawn bool     `json:"withdrawn,omitempty"`
}

// StatusDigest is the identity of a render status — the rendered
// artifact and the Rendered condition, either nil — as "sha256:<hex>":
// the artifact's digest, revision and URL, and the condition's status,
// reason, message and observedGeneration. The times are left out: a
// condition a controller sets holds nanoseconds and the API server stores
// it in seconds, and rewriting the same render status keeps its meaning
// (the same artifact, the same verdict on it). Both controllers compute it
// from the objects they read, so it is the one comparison of render
// statuses: sync-controller decides with it whether a status write
// changes the render, whether a conflict was render-controller's write,
// and whether a record replaces the stored status.
func StatusDigest(artifact *meta.Artifact, rendered *metav1.Condition) string {
	type artifactID struct {
		Digest, Revision, URL string
	}
	type conditionID struct {
		Status, Reason, Message string
		ObservedGeneration      int64
	}
	id := struct {
		Artifact *artifactID
		Rendered *conditionID
	}{}
	if artifact != nil {
		id.Artifact = &artifactID{Digest: artifact.Digest, Revision: artifact.Revision, URL: artifact.URL}
	}
	if rendered != nil {
		id.Rendered = &conditionID{Status: string(rendered.Status), Reason: rendered.Reason, Message: rendered.Message,
			ObservedGeneration: rendered.ObservedGeneration}
	}
	b, _ := json.Marshal(id) // strings and an integer: it cannot fail
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ReplacesStatus says whether the record may be taken over a stored
// render status of digest stored: it names it, or it names none (a
// render-controller of the previous version).
func (r *Record) ReplacesStatus(stored string) bool {
	if len(r.Replaces) == 0 {
		return true
	}
	for _, d := range r.Replaces {
		if d == stored {
			return true
		}
	}
	return false
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
	if len(r.Replaces) > MaxReplaces {
		return fmt.Errorf("the render record of %s %s names %d render statuses it replaces, more than %d", r.Kind, r.Key(), len(r.Replaces), MaxReplaces)
	}
	if r.Artifact == nil || r.Artifact.Digest == "" || r.Artifact.Revision == "" {
		return fmt.Errorf("the render record of %s %s has no artifact digest or revision", r.Kind, r.Key())
	}
	if !strings.HasPrefix(r.Artifact.URL, origin+"/") {
		return fmt.Errorf("the render record of %s %s names artifact URL %q, not under the feed's address %s", r.Kind, r.Key(), r.Artifact.URL, origin)
	}
	return nil
}
