// Package helmvalues merges a HelmRelease's user values the one way
// render-controller (and any other reader, such as the command line) reads
// them: spec.valuesFrom in order, then spec.values over them all, as Flux's
// helm-controller does. The chart's own values.yaml and valuesFiles come
// under these; pkg/helmrender coalesces them with Helm.
//
// Each valuesFrom entry is a ConfigMap or a Secret of the HelmRelease's
// namespace and one of its keys (valuesKey, values.yaml by default):
//
//   - without targetPath the key holds a YAML document of values, parsed as
//     Helm parses a values file (sigs.k8s.io/yaml: numbers are float64) and
//     merged over the values so far with Helm's MergeMaps (maps merge key by
//     key at every depth; anything else replaces);
//   - with targetPath the key holds one value, set at that path with Helm's
//     strvals parser (the syntax of --set: a.b[0].c): a value in single or
//     double quotes is the string inside them, any other is typed as --set
//     types it (true, false, null, integers). Unlike --set, the whole value
//     is taken: a comma in it separates nothing.
//
// An optional entry whose object or key is missing is skipped; one that is
// not optional is an error naming the object and key.
//
// # Hostile input
//
// What is read is bounded (Limits): the bytes of every key read and of
// spec.values together, and the YAML nodes of every document, counted with
// aliases expanded before anything expands them, so an alias bomb is
// refused at its compressed size. A Secret's content never appears in an
// error: a YAML error from a Secret says where, not what.
package helmvalues
