// Package viewtest holds what the UI's browser tests against the real API
// server share (ui/server/opsview, imageview and setview): a ServiceAccount's
// token with the rights a test gives it, signing in with it in token mode,
// and the UI server run for the length of a test.
package viewtest
