# The one Tessera image: the scheduler extender, the device plugin and the
# admission webhook, each under /usr/local/bin, as deploy/helm/tessera runs
# them. Build from the repository root:
#
#   docker build -t ghcr.io/tessera-gpu/tessera:0.1.0 .

# Build and run stages share Debian 12, so the device plugin links against
# the same glibc it runs with.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is reused while only Tessera's code changes.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The extender and the webhook are static. The device plugin needs cgo:
# go-nvml loads the driver's libnvidia-ml.so with dlopen at run time (the
# NVIDIA container toolkit mounts it), so the image ships no NVIDIA library.
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/tessera-extender ./scheduler \
 && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/tessera-webhook ./webhook \
 && . hack/lib/cgo.sh && CGO_ENABLED=1 go build -trimpath -ldflags=-s -o /out/tessera-device-plugin ./deviceplugin

# distroless/base has glibc (for the device plugin) and nothing else: no
# shell, no package manager. Its default user is nonroot (65532); the chart
# runs the device plugin as root, which the kubelet's socket directory needs.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tessera-extender"]
