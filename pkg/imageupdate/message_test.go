package imageupdate

import (
	"context"
	"strings"
	"testing"
)

// fluxExample is the shape of the template Flux documents, with
// Values added.
const fluxExample = `Automated image update for {{ .Values.cluster }}

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind | lower }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
`

func TestTheMessageTemplateSeesFluxsData(t *testing.T) {
	tree := loadTree(t, "testdata/setters/in")
	res, err := Setters(context.Background(), tree, "apps/podinfo/kustomization.yml", testRefs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := ParseMessageTemplate(fluxExample)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Execute(NewTemplateData(AutomationObject{Namespace: "flux-system", Name: "podinfo"}, res, map[string]string{"cluster": "prod"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `Automated image update for prod

Automation name: flux-system/podinfo

Files:
- kustomization.yml
Objects:
-  
  Changes:
    - 5.0.0 -> 5.0.3
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	def, err := ParseMessageTemplate("")
	if err != nil {
		t.Fatal(err)
	}
	got, err = def.Execute(NewTemplateData(AutomationObject{Namespace: "flux-system", Name: "podinfo"}, res, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Update images from flux-system/podinfo\n\n- 5.0.0 -> 5.0.3\n"; got != want {
		t.Errorf("default message: got\n%q\nwant\n%q", got, want)
	}
}

func TestUnboundedTemplatesAreRefused(t *testing.T) {
	for text, want := range map[string]string{
		`{{ range 1000000000 }}{{ end }}`:                                                                                   "goes over a map or list",
		`{{ $n := len .Changed.Changes }}{{ range $n }}{{ end }}`:                                                           "goes over a map or list",
		`{{ $c := .Changed.Changes }}{{ $c = 7 }}{{ range $c }}{{ end }}`:                                                   "goes over a map or list",
		`{{ with len .Values }}{{ range . }}{{ end }}{{ end }}`:                                                             "goes over a map or list",
		`{{ range .Changed.Changes }}{{ range $.Changed.Changes }}{{ range $.Changed.Changes }}{{ end }}{{ end }}{{ end }}`: "nests at most 2 deep",
		`{{ define "x" }}{{ end }}`:                                                                                         "not supported",
		`{{ range .Updated }}{{ end }}`:                                                                                     ".Updated is not template data",
		strings.Repeat("x", MaxTemplateBytes+1):                                                                             "more than",
	} {
		_, err := ParseMessageTemplate(text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: got %v, want an error with %q", text, err, want)
		}
	}
	// Declared with := from the data, a variable can be ranged over.
	if _, err := ParseMessageTemplate(`{{ $c := .Changed.Changes }}{{ range $i, $x := $c }}{{ $x.NewValue }}{{ end }}`); err != nil {
		t.Errorf("a range over a declared variable: %v", err)
	}
}

func TestTemplateOutputAndWorkAreBounded(t *testing.T) {
	data := NewTemplateData(AutomationObject{}, Result{}, map[string]string{"big": strings.Repeat("y", 40<<10)})
	for text, want := range map[string]string{
		`{{ printf "%999999d" 1 }}`:          "at most 256",
		`{{ .Values.big }}{{ .Values.big }}`: "output too long: more than 65536 bytes",
		`{{ $x := .Values.big }}{{ $x = print $x $x }}{{ $x = print $x $x }}{{ $x = print $x $x }}`: "builds more than",
	} {
		tmpl, err := ParseMessageTemplate(text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tmpl.Execute(data); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", text, err, want)
		}
	}
}
