// Package docstest keeps Plumb's documentation true to its code. It has no
// code of its own, only tests, and needs no cluster. They read README.md,
// deploy/README.md, docs/**/*.md and the comments of every doc.go, and fail,
// naming the file, the line and the name, when the docs name
//
//   - a command-line flag, in backticks (two dashes and a name), that no
//     program of Plumb's registers: the four controllers, the ui server and
//     plumb-local (their pflag and flag definitions, read from the Go
//     source) and the plumb CLI (every command's --help, run in process);
//     flags of other tools pass only through a short allow-list;
//   - a kind, written `Kind/name` in backticks, as a YAML `kind:` or in an
//     API page's kind field, that is neither one of Plumb's API groups nor
//     a Kubernetes kind; and when docs/api/README.md's table of kinds
//     misses one of Plumb's kinds or lists one that does not exist.
//
// Condition and event reasons are api/reasons_test.go's: the Reasons tables
// of docs/api and the reasons the other docs name.
package docstest
