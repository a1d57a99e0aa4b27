package bucket

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// A key is written only when it is a relative path of plain elements.
func TestOnlyPlainRelativeKeysAreWritten(t *testing.T) {
	for _, key := range []string{"a.yaml", "deploy/app/cm.yaml", ".sourceignore.d/x", "a..b/c"} {
		if err := checkKey(key); err != nil {
			t.Errorf("%q refused: %v", key, err)
		}
	}
	for _, key := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a\\..\\b", "a\x00b", ".."} {
		if err := checkKey(key); !errors.Is(err, ErrUnsafeKey) {
			t.Errorf("%q accepted", key)
		}
	}
}

// Flux's revision of an empty index is sha256 of nothing (Flux's docs
// show it for an empty bucket); of objects, sha256 of "<key> <etag>\n"
// in key order.
func TestRevisionIsFluxs(t *testing.T) {
	empty := &Index{objects: map[string]object{}}
	if got := empty.Revision(); got != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty index: %s", got)
	}
	a := &Index{objects: map[string]object{"b": {etag: "2"}, "a": {etag: "1"}}}
	b := &Index{objects: map[string]object{"a": {etag: "1"}, "b": {etag: "2"}}}
	c := &Index{objects: map[string]object{"a": {etag: "1"}, "b": {etag: "3"}}}
	if a.Revision() != b.Revision() || a.Revision() == c.Revision() {
		t.Errorf("revisions %s %s %s: the same index must give the same, another ETag another", a.Revision(), b.Revision(), c.Revision())
	}
}

// An answer longer than its bound fails the read past it.
func TestAnswersAreCut(t *testing.T) {
	body := &cappedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), left: 10}
	b, err := io.ReadAll(body)
	if len(b) != 10 || err == nil || !strings.Contains(err.Error(), "longer than allowed") {
		t.Errorf("read %d bytes, error %v", len(b), err)
	}
}
