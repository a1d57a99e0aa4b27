// Package ociartifact packs a folder into an OCI artifact in the format of
// Flux's `flux push artifact`, so that artifacts pushed by Plumb are
// pulled by Flux's OCIRepository and the other way round.
//
// The artifact is an OCI image manifest with one layer: the folder packed
// by pkg/artifact's Pack (deterministic: the same tree is the same layer
// digest), media type application/vnd.cncf.flux.content.v1.tar+gzip, and
// a config of media type application/vnd.cncf.flux.config.v1+json. The
// manifest carries the annotations org.opencontainers.image.source and
// .revision (where the content came from, e.g. a Git URL and
// <branch>@sha1:<commit>) and org.opencontainers.image.created.
//
// Push is `plumb push artifact`'s engine; source-controller's tests use it
// to push what an OCIRepository then pulls.
package ociartifact
