// Package policy chooses an ImagePolicy's latest tag among an
// ImageRepository's tags, as Flux's image-reflector-controller does:
//
//   - filterTags.pattern keeps the tags it matches; with
//     filterTags.extract, each kept tag is ordered by the expansion of
//     extract over the match ($1, ${name}) rather than by the tag itself,
//     and the tag whose value wins is the one chosen.
//   - semver: the highest value that parses as a semantic version
//     (Masterminds/semver, with its lenient parse: v1.2, 1.2) within the
//     range; values that do not parse are skipped.
//   - alphabetical: the values in byte order; asc chooses the last, desc
//     the first.
//   - numerical: the values as float64s; asc chooses the highest, desc the
//     lowest; a value that is not a number fails the policy, as Flux's
//     does, since the order it was asked for cannot be had.
//
// Ties go to the tag listed later in byte order, so the choice does not
// depend on the order the registry listed them in.
//
// Patterns come from the object's author: Go's regexp runs in time linear
// in the input, and Compile refuses a pattern over MaxPatternBytes, a
// range over MaxRangeBytes and a tag longer than a registry allows is not
// matched (MaxTagBytes), so one evaluation is bounded by the repository's
// tag limit.
package policy
