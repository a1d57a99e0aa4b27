package imagebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// builderSources are in every cache key: the workspace's module files
// (a requirement bumped in one module changes every build of the
// workspace) and this builder, which makes the base layer and the config.
var builderSources = []string{"go.work", "go.work.sum", "pkg/imagebuild"}

// workspaceModFiles are the go.mod and go.sum of every module folder at
// the root.
func workspaceModFiles(root string) ([]string, error) {
	var files []string
	for _, pattern := range []string{"*/go.mod", "*/go.sum"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				return nil, err
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files, nil
}

// sourcesDigest hashes what paths (relative to root, the repository's top)
// hold in the working tree, as Git sees it: the tree or blob HEAD has for
// each path, then every file `git status` reports changed, added, deleted
// or untracked under them, by its content. Ignored files are left out, as
// they are of a clone; nothing is written to the repository. It costs two
// git commands, whatever the size of the trees.
func sourcesDigest(ctx context.Context, root string, paths []string) (string, error) {
	paths = slices.Sorted(slices.Values(paths))
	paths = slices.Compact(paths)
	h := sha256.New()

	tree, err := git(ctx, root, append([]string{"ls-tree", "HEAD", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	h.Write(tree)

	status, err := git(ctx, root, append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	var changed []string
	for _, rec := range strings.Split(string(status), "\x00") {
		// "XY path": two status letters and a space.
		if len(rec) > 3 {
			changed = append(changed, rec[3:])
		}
	}
	slices.Sort(changed)
	for _, rel := range changed {
		sum, err := fileDigest(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "changed %s %s\n", rel, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fileDigest is the content's SHA-256, or "deleted", or a link's target.
func fileDigest(path string) (string, error) {
	fi, err := os.Lstat(path)
	switch {
	case os.IsNotExist(err):
		return "deleted", nil
	case err != nil:
		return "", err
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(path)
		return "link:" + target, err
	case !fi.Mode().IsRegular():
		return fi.Mode().String(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := sha256.New()
	if _, err := io.Copy(s, f); err != nil {
		return "", err
	}
	// The executable bit is part of a Git tree, so of the key too.
	return fmt.Sprintf("%x %o", s.Sum(nil), fi.Mode().Perm()&0o111), nil
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// goVersion is the version of the toolchain `go build` runs in dir (the
// go.work's toolchain line may choose another than the one on PATH).
func goVersion(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
