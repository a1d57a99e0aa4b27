package live

// Change says that something about one object changed: the object itself
// (the UI's watch of the overview's kinds (kinds.All)) or an event was stored about it (the
// stream). A page that shows the object fetches it again.
type Change struct {
	// Kind is the object's Kind ("Kustomization").
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Reason is what happened: Added, Updated or Deleted for the watch, the
	// event's reason (DriftDetected, …) for the stream.
	Reason string `json:"reason"`
}

// Reasons of the changes the watch sees.
const (
	Added   = "Added"
	Updated = "Updated"
	Deleted = "Deleted"
)

// ChangeSource is a further source of changes (package stream: one per
// event stored on JetStream). Changes returns a channel of changes and a
// function that stops them and closes the channel.
type ChangeSource interface {
	Changes() (<-chan Change, func())
}
