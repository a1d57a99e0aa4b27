package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// HookSyncLabel is the label sync-controller puts on every hook object it
// creates, with the SyncID of the sync it was created for as its value.
const HookSyncLabel = "plumb.dev/hook-sync"

// SyncID names one sync operation: the digest of the rendered artifact and
// the generation it applies, and when it started (status.sync's digest,
// generation and startedAt). sync-controller seeds Build with it and labels
// every hook it creates with it, so whoever reads status.sync (a restarted
// controller, the UI) finds the hooks of that sync.
func SyncID(digest string, generation int64, started time.Time) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%d", digest, generation, started.Unix())))
	return hex.EncodeToString(sum[:])[:10]
}
