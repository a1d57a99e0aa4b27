// Package options holds the command-line options only notification-controller
// takes, next to the shared ones in plumb.dev/pkg/options.
package options
