package imageupdate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"plumb.dev/pkg/textbudget"
)

// Bounds of a commit message template (see the package doc).
const (
	MaxTemplateBytes = 16 << 10
	MaxMessageBytes  = 64 << 10
	MaxRangeDepth    = 2
	ExecTimeout      = time.Second
)

// DefaultMessageTemplate is the commit message when the automation has
// no messageTemplate.
const DefaultMessageTemplate = `Update images from {{ .AutomationObject }}

{{ range .Changed.Changes -}}
- {{ .OldValue }} -> {{ .NewValue }}
{{ end -}}
`

// AutomationObject names the ImageUpdateAutomation; it prints as
// namespace/name.
type AutomationObject struct {
	Namespace, Name string
}

func (o AutomationObject) String() string { return o.Namespace + "/" + o.Name }

// TemplateData is what a message template sees, in Flux's shape:
// .AutomationObject, .Changed.FileChanges, .Changed.Objects,
// .Changed.Changes and .Values (spec.git.commit.messageTemplateValues).
type TemplateData struct {
	AutomationObject AutomationObject
	Changed          Changed
	Values           map[string]string
}

// Changed is a Result as templates range over it. Objects and Changes
// are methods of Result in Flux and fields here: a template spells them
// the same, and fields let Parse check what a {{range}} goes over.
type Changed struct {
	FileChanges map[string]ObjectChanges
	Objects     ObjectChanges
	Changes     []Change
}

// NewTemplateData is the data of a commit made for r.
func NewTemplateData(obj AutomationObject, r Result, values map[string]string) TemplateData {
	return TemplateData{
		AutomationObject: obj,
		Changed:          Changed{FileChanges: r.FileChanges, Objects: r.Objects(), Changes: r.Changes()},
		Values:           values,
	}
}

// MessageTemplate is a parsed and checked messageTemplate.
type MessageTemplate struct{ t *template.Template }

// ParseMessageTemplate parses text ("" is DefaultMessageTemplate) and
// refuses the shapes whose work is not bounded by the data's size. Its
// error is for a person: spec.git.commit.messageTemplate is wrong and no
// retry helps.
func ParseMessageTemplate(text string) (*MessageTemplate, error) {
	if text == "" {
		text = DefaultMessageTemplate
	}
	if len(text) > MaxTemplateBytes {
		return nil, fmt.Errorf("the message template is %d bytes, more than %d", len(text), MaxTemplateBytes)
	}
	t, err := template.New("message").Option("missingkey=zero").Funcs(textbudget.Funcs).Parse(text)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New("{{define}} and {{block}} are not supported: write one template")
	}
	c := checker{assigned: map[string]bool{}}
	collectAssigned(t.Root, c.assigned)
	root := reflect.TypeFor[TemplateData]()
	if err := c.walk(t.Root, scope{dot: root, vars: map[string]reflect.Type{"$": root}}); err != nil {
		return nil, err
	}
	return &MessageTemplate{t: t}, nil
}

// runner runs the message templates, two at once at most: those left
// behind by the timeout cannot pile up.
var runner = textbudget.NewRunner(2, ExecTimeout)

// Execute renders the message, bounded in output (MaxMessageBytes), in
// the text its functions build (textbudget.MaxBuiltBytes) and in time
// (ExecTimeout).
func (m *MessageTemplate) Execute(data TemplateData) (string, error) {
	out, err := runner.Execute(m.t, data, MaxMessageBytes, textbudget.MaxBuiltBytes)
	if err != nil {
		return "", fmt.Errorf("the message template: %w", err)
	}
	return out, nil
}

// scope is what the checker knows at a node: the type of dot and of each
// variable (nil: unknown), and how deep in {{range}} it is.
type scope struct {
	dot   reflect.Type
	vars  map[string]reflect.Type
	depth int
}

func (s scope) with(dot reflect.Type, decl []*parse.VariableNode, types ...reflect.Type) scope {
	vars := make(map[string]reflect.Type, len(s.vars)+len(decl))
	for k, v := range s.vars {
		vars[k] = v
	}
	for i, d := range decl {
		var t reflect.Type
		if i < len(types) {
			t = types[i]
		}
		vars[d.Ident[0]] = t
	}
	return scope{dot: dot, vars: vars, depth: s.depth}
}

// checker refuses a {{range}} over anything but a map or a slice of the
// data, known from the template's text alone: Go's templates also range
// over integers and functions ({{range 1000000000}}), which no output
// bound stops when the body prints nothing. Ranges nest at most
// MaxRangeDepth deep, so the work is at most the data's size squared.
// Variables ever assigned with = are never ranged over: their type is not
// known where the range runs.
type checker struct {
	assigned map[string]bool
}

func collectAssigned(n parse.Node, out map[string]bool) {
	var pipe *parse.PipeNode
	var lists []*parse.ListNode
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				collectAssigned(c, out)
			}
		}
		return
	case *parse.ActionNode:
		pipe = n.Pipe
	case *parse.IfNode:
		pipe, lists = n.Pipe, []*parse.ListNode{n.List, n.ElseList}
	case *parse.WithNode:
		pipe, lists = n.Pipe, []*parse.ListNode{n.List, n.ElseList}
	case *parse.RangeNode:
		pipe, lists = n.Pipe, []*parse.ListNode{n.List, n.ElseList}
	}
	if pipe != nil && pipe.IsAssign {
		for _, v := range pipe.Decl {
			out[v.Ident[0]] = true
		}
	}
	for _, l := range lists {
		collectAssigned(l, out)
	}
}

func (c checker) walk(n parse.Node, s scope) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, child := range n.Nodes {
			if err := c.walk(child, s); err != nil {
				return err
			}
			// {{$x := ...}} declares $x for the rest of the list.
			if a, ok := child.(*parse.ActionNode); ok && len(a.Pipe.Decl) > 0 && !a.Pipe.IsAssign {
				s = s.with(s.dot, a.Pipe.Decl, c.typeOf(a.Pipe, s))
			}
		}
	case *parse.ActionNode:
		return c.fields(n.Pipe, s)
	case *parse.TemplateNode:
		return errors.New("{{template}} is not supported: write one template")
	case *parse.IfNode:
		if err := c.fields(n.Pipe, s); err != nil {
			return err
		}
		inner := s.with(s.dot, n.Pipe.Decl, c.typeOf(n.Pipe, s))
		if err := c.walk(n.List, inner); err != nil {
			return err
		}
		return c.walk(n.ElseList, s)
	case *parse.WithNode:
		if err := c.fields(n.Pipe, s); err != nil {
			return err
		}
		t := c.typeOf(n.Pipe, s)
		if err := c.walk(n.List, s.with(t, n.Pipe.Decl, t)); err != nil {
			return err
		}
		return c.walk(n.ElseList, s)
	case *parse.RangeNode:
		if err := c.fields(n.Pipe, s); err != nil {
			return err
		}
		if s.depth >= MaxRangeDepth {
			return fmt.Errorf("{{range}} nests at most %d deep", MaxRangeDepth)
		}
		t := c.typeOf(n.Pipe, s)
		if t == nil || (t.Kind() != reflect.Map && t.Kind() != reflect.Slice) {
			return fmt.Errorf("{{range %s}}: {{range}} goes over a map or list of the data only (such as .Changed.Changes or .Changed.FileChanges)", n.Pipe)
		}
		var inner scope
		switch len(n.Pipe.Decl) {
		case 2:
			key := reflect.TypeFor[int]()
			if t.Kind() == reflect.Map {
				key = t.Key()
			}
			inner = s.with(t.Elem(), n.Pipe.Decl, key, t.Elem())
		default:
			inner = s.with(t.Elem(), n.Pipe.Decl, t.Elem())
		}
		inner.depth = s.depth + 1
		if err := c.walk(n.List, inner); err != nil {
			return err
		}
		return c.walk(n.ElseList, s)
	}
	return nil
}

// fields refuses .Updated, which Flux's v1 API removed, with the reason.
func (c checker) fields(p *parse.PipeNode, s scope) error {
	if p == nil || s.dot != reflect.TypeFor[TemplateData]() {
		return nil
	}
	for _, cmd := range p.Cmds {
		for _, a := range cmd.Args {
			if f, ok := a.(*parse.FieldNode); ok && f.Ident[0] == "Updated" {
				return errors.New(".Updated is not template data (Flux's v1 API removed it): use .Changed")
			}
		}
	}
	return nil
}

// typeOf is the static type of a pipeline that is one field chain on dot
// or on a variable never reassigned; nil otherwise.
func (c checker) typeOf(p *parse.PipeNode, s scope) reflect.Type {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return nil
	}
	var t reflect.Type
	var idents []string
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.DotNode:
		return s.dot
	case *parse.FieldNode:
		t, idents = s.dot, a.Ident
	case *parse.VariableNode:
		if c.assigned[a.Ident[0]] {
			return nil
		}
		t, idents = s.vars[a.Ident[0]], a.Ident[1:]
	default:
		return nil
	}
	for _, name := range idents {
		if t == nil {
			return nil
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := t.FieldByName(name)
			if !ok || !f.IsExported() {
				return nil
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			return nil
		}
	}
	return t
}
