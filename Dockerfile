# syntax=docker/dockerfile:1

# pacer's image: one static binary on a distroless base, running as a
# non-root user. The same image runs every process kind; the command picks
# one (worker, serve, migrate, sim, and the operator commands).
#
#   docker build --build-arg PACER_COMMIT=$(git rev-parse --short=12 HEAD) -t pacer .
#   docker run --rm pacer version
#
# .git is not in the build context: PACER_COMMIT is the commit baked into
# the binary, the workers' build ID (SPEC §3.5). Without it a worker refuses
# to start unless PACER_BUILD_ID names the build.

ARG GO_VERSION=1.26

# Base images are pinned by tag, not yet by digest: the digests could not
# be read where this was written (no registry access). To pin, replace each
# FROM's tag with tag@sha256:<digest> from
#   docker buildx imagetools inspect golang:1.26-bookworm
#   docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot
# and let Dependabot or Renovate move them (issue 28, finding 11).

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG PACER_COMMIT=""
# CGO off: a static binary that needs no libc, so the final image needs none.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/pacer-dev/pacer/worker.commit=${PACER_COMMIT}" -o /out/pacer ./cmd/pacer

# distroless/static: CA certificates (for Tenero, Hiro and Temporal Cloud over
# TLS) and tzdata, no shell, no package manager. The nonroot tag runs as
# uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pacer /usr/local/bin/pacer
USER nonroot:nonroot
# Inside a container the API must listen beyond loopback to be reachable.
ENV PACER_HTTP_ADDR=0.0.0.0:8080 \
    PACER_LOG_FORMAT=json
# 8080: the HTTP API; 9090: /metrics of a worker run with --http "".
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/pacer"]
CMD ["worker"]
