// Package fetch downloads an artifact that another Plumb controller serves,
// with retries and exponential backoff, and verifies its sha256 digest before
// handing a single byte to the caller: a truncated, tampered or oversized
// download is an error, never a partial result.
package fetch
