package artifact

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// PackOptions tune Pack.
type PackOptions struct {
	// Ignore decides what is left out; nil applies the defaults
	// (NewIgnorer(nil)). .sourceignore files found while walking are added
	// to it.
	Ignore *Ignorer
	// Level is the gzip level; 0 means gzip.DefaultCompression (6), the
	// level `gzip -6` uses, so artifacts are comparable with Git tooling.
	Level int
}

// epoch is the modification time written for every entry.
var epoch = time.Unix(0, 0).UTC()

// Pack writes a deterministic tar.gz of the tree under dir to w; see the
// package doc for the rules. It checks ctx between files.
func Pack(ctx context.Context, w io.Writer, dir string, opts PackOptions) error {
	ig := opts.Ignore
	if ig == nil {
		ig = NewIgnorer(nil)
	}
	level := opts.Level
	if level == 0 {
		level = gzip.DefaultCompression
	}
	gz, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return err
	}
	p := &packer{ctx: ctx, root: dir, ig: ig, tw: tar.NewWriter(gz), buf: make([]byte, 64<<10)}
	if err := p.walk(nil); err != nil {
		return err
	}
	if err := p.tw.Close(); err != nil {
		return fmt.Errorf("closing the tar stream: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("closing the gzip stream: %w", err)
	}
	return nil
}

type packer struct {
	ctx   context.Context
	root  string
	ig    *Ignorer
	tw    *tar.Writer
	buf   []byte
	files int
}

// walk packs the folder at the path elements rel, depth first, entries in
// the lexical order os.ReadDir returns.
func (p *packer) walk(rel []string) error {
	abs := filepath.Join(append([]string{p.root}, rel...)...)
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("reading %s: %w", abs, err)
	}
	// The folder's own .sourceignore scopes to it and its sub-folders, so it
	// must be read before any entry is matched.
	for _, e := range entries {
		if e.Name() == IgnoreFile && e.Type().IsRegular() {
			f, err := os.Open(filepath.Join(abs, IgnoreFile))
			if err != nil {
				return err
			}
			err = p.ig.AddRules(f, rel)
			f.Close()
			if err != nil {
				return fmt.Errorf("reading %s: %w", filepath.Join(abs, IgnoreFile), err)
			}
			break
		}
	}
	for _, e := range entries {
		path := append(rel[:len(rel):len(rel)], e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if p.ig.Match(path, true) {
				continue
			}
			if err := p.walk(path); err != nil {
				return err
			}
		case t.IsRegular():
			if p.ig.Match(path, false) {
				continue
			}
			if err := p.file(abs, path, e); err != nil {
				return err
			}
		default:
			// Symbolic links, sockets and devices are not packed: an
			// extractor then only ever creates plain files.
		}
	}
	return nil
}

func (p *packer) file(dir string, path []string, e fs.DirEntry) error {
	if p.files++; p.files%256 == 0 {
		if err := p.ctx.Err(); err != nil {
			return err
		}
	}
	name := filepath.Join(dir, e.Name())
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	mode := int64(0o644)
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.Join(path, "/"),
		Mode:     mode,
		Size:     fi.Size(),
		ModTime:  epoch,
	}
	if err := p.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("packing %s: %w", hdr.Name, err)
	}
	n, err := io.CopyBuffer(p.tw, io.LimitReader(f, fi.Size()), p.buf)
	if err != nil {
		return fmt.Errorf("packing %s: %w", hdr.Name, err)
	}
	if n != fi.Size() {
		return fmt.Errorf("packing %s: the file shrank while it was read", hdr.Name)
	}
	return nil
}
