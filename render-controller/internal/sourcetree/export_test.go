package sourcetree

// Stats is what the cache holds.
type Stats struct {
	Trees, InUse int
	Bytes        int64
}

// Stats reports the trees kept, those in use, and their extracted bytes.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Trees: len(c.trees), Bytes: c.bytes}
	for _, t := range c.trees {
		if t.users > 0 {
			s.InUse++
		}
	}
	return s
}
