// Package config holds notification-controller's own settings — the
// webhook receiver, the JetStream consumer and alert delivery — and their
// flags, next to the flags every controller shares in plumb.dev/pkg/options.
// It is a package of its own because the dispatcher, the receiver and main
// all read it.
package config
