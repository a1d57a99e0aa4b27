# The image of one of Plumb's programs: source-controller, render-controller,
# sync-controller, notification-controller or ui, named by PROGRAM (the
# folder of its main package, which is also its Go module). Build from the
# repository root, where go.work is:
#
#   docker build --build-arg PROGRAM=source-controller -t source-controller .
#
# The builder stage compiles with the Go workspace, so the image holds the
# same module versions that the tests ran with.
FROM golang:1.26 AS builder
ARG PROGRAM
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /workspace
RUN test -n "${PROGRAM}" || { echo "set --build-arg PROGRAM=<program>" >&2; exit 1; }

# go.work names every module, so each one's go.mod must be present; copying
# the go.mod and go.sum files first lets the module download stay cached
# until a dependency changes.
COPY go.work go.work.sum ./
COPY api/go.* api/
COPY pkg/go.* pkg/
COPY source-controller/go.* source-controller/
COPY render-controller/go.* render-controller/
COPY sync-controller/go.* sync-controller/
COPY notification-controller/go.* notification-controller/
COPY cli/go.* cli/
COPY e2e/go.* e2e/
COPY ui/go.* ui/
COPY deploy/go.* deploy/
RUN go mod download

# The program's sources and the two modules every program imports. The ui's
# static files are embedded in its binary (go:embed), so they come with ui/.
COPY api/ api/
COPY pkg/ pkg/
COPY ${PROGRAM}/ ${PROGRAM}/
# kustomize_disable_go_plugin_support: as the Makefile's GOFLAGS, kustomize
# without its Go-plugin loader (Plumb disables kustomize plugins). Without
# cgo it costs nothing either way; with cgo the loader would keep every
# exported method and a dynamic symbol table in the binary and in memory.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -tags=kustomize_disable_go_plugin_support -ldflags="-s -w" -o /out/program ./${PROGRAM}

# distroless/static: no shell, no package manager, a non-root user (65532).
# An exec-form ENTRYPOINT cannot expand a build argument, so every image
# runs its program as /program; the Deployments give only args.
FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/program /program
USER 65532:65532
ENTRYPOINT ["/program"]
