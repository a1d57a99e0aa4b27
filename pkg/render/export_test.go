package render

// Len is the number of builds kept.
func (s *SharedBuilds) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
