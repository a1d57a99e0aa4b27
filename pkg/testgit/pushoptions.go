package testgit

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
)

// maxPushBody bounds what the server reads of a push to find its
// options; tests push small packs.
const maxPushBody = 64 << 20

// PushOptions returns the push options (git push -o) of the last push to
// a repository, as key=value or key lines; nil when it had none. The
// server advertises push-options with Options.Push.
func (s *Server) PushOptions(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushOptions[name]
}

// recordPushOptions reads a receive-pack request's commands and options
// (the pkt-lines before the pack) and puts the body back for
// http-backend.
func (s *Server) recordPushOptions(r *http.Request, name string) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPushBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxPushBody {
		return errors.New("push too large for testgit")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sc := pktline.NewScanner(bytes.NewReader(body))
	first, withOptions := true, false
	for sc.Scan() && len(sc.Bytes()) > 0 {
		if first {
			_, caps, _ := bytes.Cut(sc.Bytes(), []byte{0})
			withOptions = bytes.Contains(caps, []byte("push-options"))
			first = false
		}
	}
	var opts []string
	for withOptions && sc.Scan() && len(sc.Bytes()) > 0 {
		opts = append(opts, strings.TrimSuffix(string(sc.Bytes()), "\n"))
	}
	s.mu.Lock()
	if s.pushOptions == nil {
		s.pushOptions = map[string][]string{}
	}
	s.pushOptions[name] = opts
	s.mu.Unlock()
	return nil
}
