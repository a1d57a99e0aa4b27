// Package glob matches object names against patterns in which '*' stands
// for any run of characters, as Alert eventSources and Receiver resources
// name objects.
package glob
