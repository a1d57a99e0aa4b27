package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// SchemaVersion names the version of the event schema this package writes.
const SchemaVersion = "plumb.dev/event/v1"

// SubjectPrefix is the first part of every event subject.
const SubjectPrefix = "plumb.events"

// Severity of an event.
type Severity string

const (
	// SeverityInfo marks events about normal progress.
	SeverityInfo Severity = "info"
	// SeverityError marks events about failures.
	SeverityError Severity = "error"
)

// ObjectReference identifies the object an event is about.
type ObjectReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// Change is one field that differs between Git and the cluster.
type Change struct {
	// Object is <kind>/<namespace>/<name> (or <kind>/<name> when cluster-scoped).
	Object string `json:"object"`
	// Path is the JSON path of the field, e.g. spec.replicas.
	Path string `json:"path"`
	// Before is the live value, After the value from Git, both as JSON text;
	// empty when the field is absent on that side.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Manager is the field manager (metadata.managedFields) of the foreign
	// write that made the live value, when one owns the field: who changed
	// it. Empty when nobody does (a field that was removed) or unknown.
	Manager string `json:"manager,omitempty"`
}

// Event is one event of the stream; see the package doc for the schema.
type Event struct {
	SchemaVersion       string            `json:"schemaVersion"`
	ID                  string            `json:"id"`
	InvolvedObject      ObjectReference   `json:"involvedObject"`
	Severity            Severity          `json:"severity"`
	Reason              string            `json:"reason"`
	Message             string            `json:"message"`
	Revision            string            `json:"revision,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	Changes             []Change          `json:"changes,omitempty"`
	Timestamp           time.Time         `json:"timestamp"`
	ReportingController string            `json:"reportingController"`
	ReportingInstance   string            `json:"reportingInstance,omitempty"`
}

// Subject returns the NATS subject the event is published on.
func (e *Event) Subject() string {
	return Subject(e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
}

// Subject returns plumb.events.<kind>.<namespace>.<name>. NATS subject tokens
// cannot hold '.', '*', '>' or whitespace; Kubernetes names may hold '.', so
// it is replaced by '_' (which names cannot hold) to keep one token per part.
// Cluster-scoped objects use the namespace token "_".
func Subject(kind, namespace, name string) string {
	if namespace == "" {
		namespace = "_"
	}
	return strings.Join([]string{SubjectPrefix, token(strings.ToLower(kind)), token(namespace), token(name)}, ".")
}

func token(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

// NewID returns a random event id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// Decode parses and checks one event as read from the stream.
func Decode(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	if major, _, _ := strings.Cut(strings.TrimPrefix(e.SchemaVersion, "plumb.dev/event/"), "."); "plumb.dev/event/"+major != SchemaVersion {
		return nil, fmt.Errorf("event schema %q is not %s", e.SchemaVersion, SchemaVersion)
	}
	switch {
	case e.ID == "":
		return nil, fmt.Errorf("event has no id")
	case e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "":
		return nil, fmt.Errorf("event %s has no involved object kind and name", e.ID)
	case e.Severity != SeverityInfo && e.Severity != SeverityError:
		return nil, fmt.Errorf("event %s has unknown severity %q", e.ID, e.Severity)
	}
	return &e, nil
}
