package testgit

// BeforePush makes f run when a push's commands reach the server over
// HTTP (POST git-receive-pack), before Git reads them; nil removes it.
// The pusher has already read the references then, so a commit f makes
// (through Repo.Commit) moves the branch under it: Git rejects the push
// as stale, as when a person's push lands between a client's fetch and
// its push. f gets the repository's name and the push's number for it
// (1 for the first), so a test can move the branch once. Over SSH the
// references are read in the same session as the push, so there is no
// such moment and f is not run.
func (s *Server) BeforePush(f func(repo string, push int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforePush = f
}

// runBeforePush runs the BeforePush hook, if any, for the n-th push to
// repo.
func (s *Server) runBeforePush(repo string, n int) {
	s.mu.Lock()
	f := s.beforePush
	s.mu.Unlock()
	if f != nil {
		f(repo, n)
	}
}
