# The operator image: the real shell-operator with the openstack-sync host binary and its plugins.
# Hook wrappers are not baked in: the chart's init container verifies each enabled plugin against
# its pinned digest and writes the wrappers into /hooks (charts/openstack-sync-operator).
#
#   docker build -t ghcr.io/openstack-sync/openstack-sync-operator:0.1.0 .
#
# The build machine of this repository has no container engine; the same build commands run in
# make build, make plugins and make e2e.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Module downloads first, so a source change does not re-download them.
COPY go.mod go.sum ./
COPY pdk/go.mod pdk/go.sum pdk/
COPY plugins-wasm/go.mod plugins-wasm/go.sum plugins-wasm/
RUN go mod download && (cd pdk && go mod download) && (cd plugins-wasm && go mod download)
COPY . .
# Static: the runtime image is Alpine.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/openstack-sync ./host/cmd/openstack-sync
RUN hack/build-plugins.sh /out/plugins \
 && cd /out/plugins && sha256sum *.wasm > SHA256SUMS && cat SHA256SUMS

FROM ghcr.io/flant/shell-operator:v1.20.2
COPY --from=build /out/openstack-sync /usr/local/bin/openstack-sync
COPY --from=build /out/plugins/ /plugins/
# The chart sets these too; they make a bare `docker run` behave like the chart's pod.
ENV SHELL_OPERATOR_HOOKS_DIR=/hooks \
    LOG_TYPE=json \
    OPENSTACK_SYNC_CACHE_DIR=/var/cache/openstack-sync
RUN mkdir -p /hooks /var/cache/openstack-sync
