// Package yamlsize counts the nodes of a parsed YAML document as they are
// once its aliases are expanded, without expanding them: the one bound on
// YAML that pkg/render (manifests) and pkg/helmvalues (Helm values) put
// before anything turns a document into Go values, which would expand an
// alias bomb (a few kilobytes that stand for billions of nodes).
package yamlsize
