package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusSelector is get's --status-selector, as Flux reads it: a
// condition type and status, both in any case ("ready=false"), matched or,
// with "!=", not matched. An object without the condition does not match.
type statusSelector struct {
	condType, status string
	negate           bool
	text             string
}

// parseStatusSelector reads TYPE=STATUS or TYPE!=STATUS; nil for "".
func parseStatusSelector(s string) (*statusSelector, error) {
	if s == "" {
		return nil, nil
	}
	sel := &statusSelector{text: s}
	sep := "="
	if strings.Contains(s, "!=") {
		sep, sel.negate = "!=", true
	}
	t, st, ok := strings.Cut(s, sep)
	t, st = strings.TrimSpace(t), strings.TrimSpace(st)
	if !ok || t == "" || st == "" || strings.Contains(st, "=") {
		return nil, fmt.Errorf("--status-selector %q: want TYPE=STATUS or TYPE!=STATUS, e.g. ready=false", s)
	}
	sel.condType, sel.status = t, st
	return sel, nil
}

// matches says whether o passes the selector; every object passes a nil
// one.
func (sel *statusSelector) matches(k *kind, o client.Object) bool {
	if sel == nil {
		return true
	}
	found := false
	for _, c := range k.status(o).conditions {
		if strings.EqualFold(c.Type, sel.condType) {
			found = strings.EqualFold(string(c.Status), sel.status)
		}
	}
	return found != sel.negate
}

// filter keeps the items that match.
func (sel *statusSelector) filter(k *kind, items []client.Object) []client.Object {
	if sel == nil {
		return items
	}
	var out []client.Object
	for _, o := range items {
		if sel.matches(k, o) {
			out = append(out, o)
		}
	}
	return out
}

// suffix words the selector for "No … found" ("" for none).
func (sel *statusSelector) suffix() string {
	if sel == nil {
		return ""
	}
	return " matching " + sel.text
}

// watchTable is `get KIND [NAME] --watch`: the table as get prints it,
// then a row for each change of an object that the selector passes, in
// the table's columns, until the context ends: an interrupt, or --timeout
// when it was given (a watch is meant to outlast the default).
func (g *globals) watchTable(cmd *cobra.Command, k *kind, names []string, allNamespaces bool, sel *statusSelector) error {
	if err := g.kube(); err != nil {
		return err
	}
	ctx := cmd.Context()
	if cmd.Flags().Changed("timeout") {
		var cancel context.CancelFunc
		ctx, cancel = withTimeout(cmd, g)
		defer cancel()
	}
	if len(names) == 1 && allNamespaces {
		return fmt.Errorf("a NAME is read in one namespace: use -n, not -A")
	}
	opts := []client.ListOption{}
	if !allNamespaces {
		opts = append(opts, client.InNamespace(g.ns))
	}
	if len(names) == 1 {
		opts = append(opts, client.MatchingFields{"metadata.name": names[0]})
	}
	p := &rowPrinter{out: g.out, k: k, withNamespace: allNamespaces, last: map[types.UID]string{}}
	listed := func() {
		if !p.listed() {
			where := "in namespace " + g.ns
			if allNamespaces {
				where = "in any namespace"
			}
			fmt.Fprintf(g.errOut, "No %s%s %s yet; watching.\n", k.plural, sel.suffix(), where)
		}
	}
	err := g.followTable(ctx, k, opts, listed, func(o client.Object, deleted bool) {
		if !deleted && !sel.matches(k, o) {
			return
		}
		row := tableRow(k, o, allNamespaces, "", time.Now())
		if deleted {
			row[len(row)-1] = "(deleted)"
		}
		p.print(o.GetUID(), row)
	})
	if ctx.Err() != nil {
		// Interrupted, or --timeout: the normal end of a watch.
		return nil
	}
	return err
}

// followTable lists the objects, hands each to emit, calls listed, then watches from the
// list's version and hands each change over; when the watch ends (the API
// server closes watches after a while) it watches again from the last
// version seen, and lists again when that version is too old. It returns
// when ctx ends or the API server refuses.
func (g *globals) followTable(ctx context.Context, k *kind, opts []client.ListOption, listed func(), emit func(o client.Object, deleted bool)) error {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			list := k.newList()
			if err := g.client.List(ctx, list, opts...); err != nil {
				return fmt.Errorf("listing %s: %w", k.plural, err)
			}
			for _, o := range sortedItems(list) {
				emit(o, false)
			}
			listed()
			rv = list.(metav1.ListInterface).GetResourceVersion()
		}
		w, err := g.client.Watch(ctx, k.newList(), append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
				continue
			}
			return fmt.Errorf("watching %s: %w", k.plural, err)
		}
		rv = consumeWatch(ctx, w, rv, emit)
		w.Stop()
		if rv != "" {
			// A closed watch: wait a moment before the next, so a server
			// that closes at once is not hammered.
			select {
			case <-ctx.Done():
			case <-time.After(pollInterval):
			}
		}
	}
	return ctx.Err()
}

// consumeWatch hands each change to emit until the watch ends, and
// returns the version to watch from next; "" to list again (the version
// is too old, 410 Gone).
func consumeWatch(ctx context.Context, w watch.Interface, rv string, emit func(o client.Object, deleted bool)) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					return ""
				}
				return rv
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				o, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				rv = o.GetResourceVersion()
				emit(o, ev.Type == watch.Deleted)
			}
		}
	}
}

// sortedItems are a list's items by namespace and name.
func sortedItems(l client.ObjectList) []client.Object {
	items := listItems(l)
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	return items
}

// rowPrinter prints the rows of a watched table: the rows of the first
// list together, aligned as get aligns them, then each change as it
// comes, every column at least as wide as before (rows come one at a
// time: no tabwriter sees them together), and a row only when it differs
// from the object's last one, the clock's columns (AGE) aside.
type rowPrinter struct {
	out           io.Writer
	k             *kind
	withNamespace bool
	last          map[types.UID]string
	widths        []int
	headed        bool
	// pending holds the first list's rows until listed.
	pending [][]string
	started bool
}

func (p *rowPrinter) print(uid types.UID, row []string) {
	key := rowKey(p.k, row)
	if p.last[uid] == key {
		return
	}
	p.last[uid] = key
	if !p.started {
		p.pending = append(p.pending, row)
		return
	}
	p.line(row)
}

// listed ends the first list: its rows are printed under the header,
// aligned together. It says whether there were any.
func (p *rowPrinter) listed() bool {
	if p.started {
		return true
	}
	p.started = true
	for _, r := range p.pending {
		p.widen(r)
	}
	for _, r := range p.pending {
		p.line(r)
	}
	n := len(p.pending)
	p.pending = nil
	return n > 0
}

func (p *rowPrinter) widen(cells []string) {
	if p.widths == nil {
		header := tableHeader(p.k, p.withNamespace)
		p.widths = make([]int, len(header))
		for i, c := range header {
			p.widths[i] = len(c)
		}
	}
	for i, c := range cells {
		p.widths[i] = max(p.widths[i], len(c))
	}
}

// line writes a row, the header before the first, each cell padded to its
// column's width and three spaces apart, as get's tabwriter does.
func (p *rowPrinter) line(cells []string) {
	p.widen(cells)
	if !p.headed {
		p.headed = true
		p.write(tableHeader(p.k, p.withNamespace))
	}
	p.write(cells)
}

func (p *rowPrinter) write(cells []string) {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", p.widths[i]-len(c)+3))
		}
	}
	fmt.Fprintln(p.out, strings.TrimRight(b.String(), " "))
}
