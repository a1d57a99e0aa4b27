package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// srcRoot is where the source tree sits in the in-memory filesystem, and
// overlayDir where the generated overlay kustomization goes, beside it so it
// is never a parent of a kustomization it references.
const (
	srcRoot    = "/source"
	overlayDir = "/plumb-overlay"
)

// maxSymlinkDepth bounds how many nested directory links are followed while
// copying, so a link cycle cannot copy forever.
const maxSymlinkDepth = 8

// copyToMemory copies the tree at dir into an in-memory filesystem below
// srcRoot. kustomize then builds on that copy, so it can neither read
// outside the source nor write anywhere. Links are followed only when they
// resolve inside dir; .git folders are left out.
func copyToMemory(dir string) (filesys.FileSystem, error) {
	realRoot, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := mem.MkdirAll(srcRoot); err != nil {
		return nil, err
	}
	return mem, copyDir(mem, realRoot, realRoot, srcRoot, 0)
}

func copyDir(mem filesys.FileSystem, realRoot, from, to string, depth int) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := path.Join(to, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			if d.Name() == ".git" && p != from {
				return filepath.SkipDir
			}
			return mem.MkdirAll(dst)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return mem.WriteFile(dst, data)
		case d.Type()&fs.ModeSymlink != 0:
			return copyLink(mem, realRoot, p, dst, depth)
		default:
			// Sockets, devices and the like are no part of a source tree.
			return nil
		}
	})
}

func copyLink(mem filesys.FileSystem, realRoot, p, dst string, depth int) error {
	target, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a dangling link is as good as absent
	}
	if err != nil {
		return err
	}
	if target != realRoot && !strings.HasPrefix(target, realRoot+string(filepath.Separator)) {
		return fmt.Errorf("symlink %s points outside the source", relTo(realRoot, p))
	}
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if depth >= maxSymlinkDepth {
			return fmt.Errorf("symlink %s: too many nested directory links", relTo(realRoot, p))
		}
		return copyDir(mem, realRoot, target, dst, depth+1)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	return mem.WriteFile(dst, data)
}

func relTo(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}
