package imageupdate

import (
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
)

// osTree is a folder on disk as go-git's worktree filesystem sees it:
// osfs's default follows links, so the setters must not.
func osTree(dir string) billy.Filesystem { return osfs.New(dir) }
