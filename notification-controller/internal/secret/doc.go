// Package secret reads the token of a Receiver or Provider Secret, by name
// (one GET: notification-controller may not list or watch Secrets), with
// errors that name the Secret and key but never a value.
package secret
