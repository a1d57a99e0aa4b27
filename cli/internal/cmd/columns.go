package cmd

import (
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// column is one column of the get table after NAME: its header and its
// cell for an object. clock says the cell changes with time alone (AGE):
// a watch prints no new row for it.
type column struct {
	header string
	cell   func(o client.Object, s status, now time.Time) string
	clock  bool
}

var (
	readyColumn = column{header: "READY", cell: func(_ client.Object, s status, _ time.Time) string {
		ready, _ := readyOf(s)
		return ready
	}}
	revisionColumn = column{header: "REVISION", cell: func(_ client.Object, s status, _ time.Time) string {
		return orDash(s.revision)
	}}
	ageColumn = column{header: "AGE", clock: true, cell: func(o client.Object, _ status, now time.Time) string {
		return age(o.GetCreationTimestamp().Time, now)
	}}
	// messageColumn is Ready's message, after "(suspended)" for a
	// suspended object: the tables without a SUSPENDED column say it
	// there.
	messageColumn = column{header: "MESSAGE", cell: func(_ client.Object, s status, _ time.Time) string {
		_, msg := readyOf(s)
		if s.suspended {
			msg = "(suspended) " + msg
		}
		return oneLine(msg)
	}}
	// plainMessageColumn is Ready's message alone, for a table with a
	// SUSPENDED column.
	plainMessageColumn = column{header: "MESSAGE", cell: func(_ client.Object, s status, _ time.Time) string {
		_, msg := readyOf(s)
		return oneLine(msg)
	}}
	// suspendedColumn is spec.suspend as Flux's image tables show it.
	suspendedColumn = column{header: "SUSPENDED", cell: func(_ client.Object, s status, _ time.Time) string {
		if s.suspended {
			return "True"
		}
		return "False"
	}}
	// defaultColumns are the get table of every kind without its own.
	defaultColumns = []column{readyColumn, revisionColumn, ageColumn, messageColumn}
)

// tableHeader is k's get table header.
func tableHeader(k *kind, withNamespace bool) []string {
	header := []string{"NAME"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	for _, c := range k.columns {
		header = append(header, c.header)
	}
	return header
}

// tableRow is one object's row of k's get table, its NAME after prefix.
// The last cell is always the MESSAGE.
func tableRow(k *kind, o client.Object, withNamespace bool, prefix string, now time.Time) []string {
	s := k.status(o)
	row := []string{prefix + o.GetName()}
	if withNamespace {
		row = append([]string{o.GetNamespace()}, row...)
	}
	for _, c := range k.columns {
		row = append(row, c.cell(o, s, now))
	}
	return row
}

// rowKey is what a watch compares to decide whether a row changed: the
// cells but the clock's.
func rowKey(k *kind, row []string) string {
	cells := append([]string{}, row[:len(row)-len(k.columns)]...)
	for i, c := range k.columns {
		if !c.clock {
			cells = append(cells, row[len(row)-len(k.columns)+i])
		}
	}
	return strings.Join(cells, "\x00")
}

// orDash is s, or "-" for nothing (a table cell is never empty, so that
// its words can be counted).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
