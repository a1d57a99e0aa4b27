package helmrender

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// validateSchemas checks values against the values.schema.json of the chart
// and of each subchart with values, as the SDK's
// chartutil.ValidateAgainstSchema does, with one difference: a $ref or
// $schema is resolved only inside the schema document or among the JSON
// Schema metaschemas the validator embeds. The SDK's validator loads any
// file:// path of the host and any http(s):// URL with a client of its own
// (out of reach of render.LockDownProcess), which a chart must not make
// render-controller do. A urn: reference is permissive, as in the SDK.
func validateSchemas(chrt *chart.Chart, values common.Values) error {
	var sb strings.Builder
	if chrt.Schema != nil {
		if err := validateSchema(values, chrt.Schema); err != nil {
			fmt.Fprintf(&sb, "%s:\n%s", chrt.Name(), err.Error())
		}
	}
	for _, sub := range chrt.Dependencies() {
		raw, ok := values[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateSchemas(sub, subValues); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

// schemaURL is where the SDK puts the schema document; messages name it.
const schemaURL = "file:///values.schema.json"

func validateSchema(values common.Values, schemaJSON []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, schema); err != nil {
		return err
	}
	v, err := c.Compile(schemaURL)
	if err != nil {
		return err
	}
	if err := v.Validate(values.AsMap()); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		var sb strings.Builder
		schemaFailures(&sb, ve)
		return errors.New(sb.String())
	}
	return nil
}

// schemaFailures writes one line per failed keyword of ve's tree: where in
// the values and which keyword, never the validator's message, which
// quotes the value (a pattern or format failure prints it whole), and the
// values may come from a Secret. A required failure also names the
// missing properties, which come from the schema.
func schemaFailures(sb *strings.Builder, ve *jsonschema.ValidationError) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			schemaFailures(sb, c)
		}
		return
	}
	keyword := strings.Join(ve.ErrorKind.KeywordPath(), "/")
	if keyword == "" {
		keyword = "schema"
	}
	fmt.Fprintf(sb, "- at '/%s': %s", strings.Join(ve.InstanceLocation, "/"), keyword)
	if r, ok := ve.ErrorKind.(*kind.Required); ok {
		fmt.Fprintf(sb, " (missing %s)", strings.Join(r.Missing, ", "))
	}
	sb.WriteString("\n")
}

// noLoader loads nothing: a reference out of the schema document is an
// error, except urn: ones, which the SDK treats as permissive.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return jsonschema.UnmarshalJSON(strings.NewReader("true"))
	}
	return nil, fmt.Errorf("%s: rendering loads no schema from outside the chart's values.schema.json", url)
}
