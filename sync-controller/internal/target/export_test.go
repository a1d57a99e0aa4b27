package target

// Test-only access to the cache.

// cached returns how many clients impersonating a ServiceAccount are kept.
func (c *Clients) cached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}
