# syntax=docker/dockerfile:1
# driftwatch: a static binary on a distroless base, running as nonroot.
#   docker build -t driftwatch:dev --build-arg VERSION=dev .

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces a module with the patched copy there (see its PATCH.md).
COPY internal/third_party/ internal/third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
# The same command deploy/deploy_test.go runs and checks (no cgo, no
# dynamic loader, no shared library).
RUN scripts/build-static.sh /out/driftwatch "${VERSION}"

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/driftwatch /driftwatch
USER nonroot:nonroot
# API and probes; both listen on loopback unless --listen / --probe-listen
# say otherwise (deploy/base/deployment.yaml does).
EXPOSE 7070 7071
ENTRYPOINT ["/driftwatch", "serve"]
CMD ["--file", "/etc/driftwatch/config/driftwatch.yaml"]
