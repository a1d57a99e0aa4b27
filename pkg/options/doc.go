// Package options holds the command-line options every Plumb controller
// shares, each group with a BindFlags method, so the four programs take the
// same flags for the same things.
package options
