package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or folder of a layer. A file's content is data, or the
// file at path on the build host, read each time the layer is written so a
// 100 MB binary is not held in memory twice.
type entry struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
	path string
}

func dir(name string, mode int64) entry { return entry{name: name, mode: mode, dir: true} }

func file(name string, mode int64, data []byte) entry {
	return entry{name: name, mode: mode, data: data}
}

func hostFile(name string, mode int64, path string) entry {
	return entry{name: name, mode: mode, path: path}
}

func owned(e entry, uid int) entry { e.uid = uid; return e }

// layer makes a gzipped OCI layer of entries whose bytes depend on nothing
// but the entries and mtime: sorted by name, owner uid = gid (0 unless set),
// no user or group names, every time mtime. The compressed form is kept
// once made, as the digest and the upload both need it.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	entries = append([]entry(nil), entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	for i := 1; i < len(entries); i++ {
		if entries[i].name == entries[i-1].name {
			return nil, fmt.Errorf("layer: %s twice", entries[i].name)
		}
	}
	mtime = mtime.UTC().Truncate(time.Second)
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, entries, mtime)) }()
		return pr, nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

func writeTar(w io.Writer, entries []entry, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: mtime,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag = tar.TypeReg
		if err := writeFile(tw, h, e); err != nil {
			return fmt.Errorf("layer: %s: %w", e.name, err)
		}
	}
	return tw.Close()
}

func writeFile(tw *tar.Writer, h *tar.Header, e entry) error {
	var r io.Reader = bytes.NewReader(e.data)
	h.Size = int64(len(e.data))
	if e.path != "" {
		f, err := os.Open(e.path)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		h.Size, r = fi.Size(), f
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}
