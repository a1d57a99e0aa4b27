// Package secret reads the token of a Receiver or Provider Secret, with
// errors that name the Secret and key but never a value.
package secret
