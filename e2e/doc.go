// Package e2e holds the end-to-end tests that run the whole Plumb suite
// (all four controllers as processes, a real API server, NATS and a Git
// server) and check the story from a pushed commit to a synced cluster.
package e2e
