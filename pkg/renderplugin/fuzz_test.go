package renderplugin

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"unicode"
)

// FuzzDecodeReply: whatever a plugin answers, the reader returns within
// its bound, and a failure's text is printable and short.
func FuzzDecodeReply(f *testing.F) {
	f.Add(200, "application/yaml", []byte("kind: A\n"))
	f.Add(200, "text/html", []byte("<html>"))
	f.Add(422, "application/json", []byte(`{"error":"exit status 1","stderr":"\u001b[31mboom"}`))
	f.Add(500, "application/json", []byte(`{"error":"x","extra":1}`))
	f.Add(502, "text/plain", bytes.Repeat([]byte("\x1b]0;x\x07"), 100))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		out, err := DecodeReply(status, contentType, bytes.NewReader(body), 64)
		if len(out) > 64 {
			t.Fatalf("%d bytes past the bound", len(out))
		}
		if f, ok := err.(*Failure); ok {
			for _, s := range []string{f.Err, f.Stderr} {
				if len(s) > 512 || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
					t.Fatalf("unsafe failure text %q", s)
				}
			}
		}
	})
}

// FuzzDecodeRequest: a request either decodes with a path inside the
// tree, or is refused.
func FuzzDecodeRequest(f *testing.F) {
	body, ct, err := EncodeRequest(context.Background(), &Request{Path: "app"}, f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
	f.Add(boundary, body.Bytes())
	f.Add(boundary, []byte("--"+boundary+"\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{\"path\":\"../x\"}\r\n--"+boundary+"--\r\n"))
	f.Add("x", []byte("--x\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{\"path\":\"a\",\"bad\":1}\r\n--x--\r\n"))
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		req, src, err := DecodeRequest("multipart/form-data; boundary=\""+boundary+"\"", bytes.NewReader(body))
		if err != nil {
			return
		}
		if req.check() != nil || strings.Contains("/"+req.Path+"/", "/../") {
			t.Fatalf("path %q accepted", req.Path)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(src, 1<<20))
	})
}
