package controller

import (
	"fmt"

	"plumb.dev/api/meta"
)

// storedRevision is Ready's message for a source whose artifact is a
// revision of its remote, once stored.
func storedRevision[T meta.ArtifactHolder](obj T) string {
	return fmt.Sprintf("stored artifact for revision %q", obj.GetArtifact().Revision)
}

// keptRevision is Ready's message for such a source whose reconcile
// failed while its last good artifact is still served; "" without one.
func keptRevision[T meta.ArtifactHolder](obj T) string {
	if obj.GetArtifact() == nil {
		return ""
	}
	return fmt.Sprintf("serving the last good artifact, revision %q", obj.GetArtifact().Revision)
}
