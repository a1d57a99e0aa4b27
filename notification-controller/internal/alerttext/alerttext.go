package alerttext

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/textbudget"
)

// Bounds of a rendered template (see the package doc).
const (
	MaxSummaryBytes = 1 << 10
	MaxMessageBytes = 16 << 10
	ExecTimeout     = 100 * time.Millisecond
)

// Object is the involved object as a template sees it.
type Object struct {
	APIVersion, Kind, Namespace, Name string
}

// View is what a template sees of an event: a copy, so a template cannot
// change what other Alerts send.
type View struct {
	InvolvedObject Object
	// Severity is info or error; Reason says what happened (e.g.
	// ReconciliationSucceeded); Revision is like main@sha1:<hex>.
	Severity, Reason, Message, Revision string
	// Metadata is the event's metadata with the Alert's eventMetadata added.
	Metadata            map[string]string
	ReportingController string
	Timestamp           time.Time
}

// viewOf copies the event into a View.
func viewOf(e *events.Event) View {
	return View{
		InvolvedObject:      Object{APIVersion: e.InvolvedObject.APIVersion, Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name},
		Severity:            string(e.Severity),
		Reason:              e.Reason,
		Message:             e.Message,
		Revision:            e.Revision,
		Metadata:            maps.Clone(e.Metadata),
		ReportingController: e.ReportingController,
		Timestamp:           e.Timestamp,
	}
}

// Templates are an Alert's parsed templates; a nil one renders nothing.
type Templates struct {
	summary, message *template.Template
	// summaryText is spec.summary as written: the fallback.
	summaryText string
}

// Parse parses the Alert's spec.summary and spec.messageTemplate. The
// error names the field.
func Parse(alert *notificationv1.Alert) (*Templates, error) {
	t := Templates{summaryText: alert.Spec.Summary}
	var err error
	if t.summary, err = parseCached("summary", alert.Spec.Summary); err != nil {
		return nil, fmt.Errorf("spec.summary: %w", err)
	}
	if t.message, err = parseCached("message", alert.Spec.MessageTemplate); err != nil {
		return nil, fmt.Errorf("spec.messageTemplate: %w", err)
	}
	return &t, nil
}

// Rendered is the text an Alert sends for one event.
type Rendered struct {
	// Summary is "" when the Alert has none.
	Summary string
	// Message is the event's message, or the message template's output.
	Message string
}

// Render renders the templates over e. On an error it still returns the
// text to send: the untemplated one for whichever template failed.
func (t *Templates) Render(e *events.Event) (Rendered, error) {
	out := Rendered{Summary: t.summaryText, Message: e.Message}
	view := viewOf(e)
	var errs []error
	if t.summary != nil {
		s, err := execute(t.summary, view, MaxSummaryBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.summary: %w", err))
		} else {
			out.Summary = s
		}
	}
	if t.message != nil {
		m, err := execute(t.message, view, MaxMessageBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.messageTemplate: %w", err))
		} else {
			out.Message = m
		}
	}
	return out, errors.Join(errs...)
}

// maxRunning bounds the executions running at once, those left behind
// by the timeout among them.
const maxRunning = 4

var runner = textbudget.NewRunner(maxRunning, ExecTimeout)

// MaxBuiltBytes bounds the text one execution's functions may build in
// all (plumb.dev/pkg/textbudget).
const MaxBuiltBytes = textbudget.MaxBuiltBytes

// Funcs are the names templates may call besides text/template's
// builtins (plumb.dev/pkg/textbudget); each execution runs with a budget
// of its own.
var Funcs = textbudget.Funcs

// execute runs tmpl over view, its output cut at limit bytes, the text
// its functions build at MaxBuiltBytes and its time at ExecTimeout.
func execute(tmpl *template.Template, view View, limit int) (string, error) {
	return runner.Execute(tmpl, view, limit, MaxBuiltBytes)
}

// parsed caches templates by text: every event an Alert sends renders
// them. It is emptied when it holds maxCached, so edits cannot grow it
// without bound.
var (
	parsedMu sync.Mutex
	parsed   = map[string]*template.Template{}
)

const maxCached = 1024

// parseCached parses text as a template named name, or returns nil for "".
func parseCached(name, text string) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	key := name + "\x00" + text
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if t, ok := parsed[key]; ok {
		return t, nil
	}
	t, err := template.New(name).Option("missingkey=zero").Funcs(Funcs).Parse(text)
	if err != nil {
		return nil, textbudget.CleanError(err)
	}
	if err := check(t); err != nil {
		return nil, err
	}
	if len(parsed) >= maxCached {
		clear(parsed)
	}
	parsed[key] = t
	return t, nil
}

// check refuses the shapes whose work is not bounded by the template's
// size times the event's (see the package doc).
func check(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errors.New("{{define}} and {{block}} are not supported: write one template")
	}
	return walk(t.Root, scope{dotIsView: true})
}

// scope is where a node of the template stands: inside a {{range}}, and
// whether dot is still the View (a {{with}} or {{range}} rebinds it to a
// value whose type check cannot follow).
type scope struct {
	inRange, dotIsView bool
}

func walk(n parse.Node, s scope) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, s); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return errors.New("{{template}} is not supported: write one template")
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, s, s)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, scope{inRange: s.inRange}, s)
	case *parse.RangeNode:
		if s.inRange {
			return errors.New("a {{range}} inside another {{range}} is not supported")
		}
		if !s.dotIsView {
			return errors.New("{{range}} inside {{with}} is not supported: range over a field of the event (such as .Metadata) outside it")
		}
		if err := overCollection(n.Pipe); err != nil {
			return err
		}
		return walkBranch(&n.BranchNode, scope{inRange: true}, s)
	}
	return nil
}

// walkBranch walks a branch's list in scope list and its else list in
// scope elseList: an {{else}} of a {{with}} or {{range}} keeps the dot it
// came with.
func walkBranch(b *parse.BranchNode, list, elseList scope) error {
	if err := walk(b.List, list); err != nil {
		return err
	}
	return walk(b.ElseList, elseList)
}

// viewType is the type a template's dot has at its top.
var viewType = reflect.TypeFor[View]()

// overCollection accepts a range pipeline that is one field chain of the
// event (.Metadata; with or without $k, $v :=) whose every step is a
// struct field, not a method, and whose value is a map or a slice: Go's
// templates also range over an integer and over functions, so
// {{range .Timestamp.UnixNano}} would loop some 10^18 times, and no
// output or time bound stops a loop that prints nothing.
func overCollection(p *parse.PipeNode) error {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return errors.New("{{range}} goes over one field of the event (such as .Metadata), not a pipeline")
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok {
		return errors.New("{{range}} goes over a field of the event only (such as .Metadata), not a number, variable or function")
	}
	t := viewType
	for i, name := range f.Ident {
		field, ok := t.FieldByName(name)
		if t.Kind() != reflect.Struct || !ok || !field.IsExported() {
			return fmt.Errorf("{{range %s}}: .%s is not a field of the event, and {{range}} goes over a map or list of the event only (such as .Metadata)",
				f, strings.Join(f.Ident[:i+1], "."))
		}
		t = field.Type
	}
	if k := t.Kind(); k != reflect.Map && k != reflect.Slice {
		return fmt.Errorf("{{range %s}}: a %s, and {{range}} goes over a map or list of the event only (such as .Metadata)", f, t)
	}
	return nil
}
