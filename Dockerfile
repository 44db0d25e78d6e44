# The one Tessera image: the scheduler extender, tessera-scheduler
# (kube-scheduler with the Tessera plugin, for the chart's scheduler.mode
# plugin), the device plugin and the admission webhook, each under
# /usr/local/bin, as deploy/helm/tessera runs them, for linux/amd64 and linux/arm64 (Grace Hopper nodes are arm64).
# Build from the repository root with BuildKit:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg GIT_COMMIT=$(git rev-parse HEAD) \
#     --build-arg BUILD_DATE=$(git show -s --format=%cI HEAD) \
#     -t ghcr.io/tessera-gpu/tessera:0.1.0 --push .
#
# The build context has no .git (.dockerignore), so the version comes from
# the build arguments; without them hack/version.sh stamps the chart's
# appVersion.

# The build stage runs on the builder's own platform and cross-compiles for
# each target, instead of emulating the target. Build and run stages share
# Debian 12, so the device plugin links against the glibc it runs with.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
# The device plugin needs cgo (go-nvml), so a target of another architecture
# needs that architecture's C cross compiler and libc; Debian packages both.
RUN set -eu; \
    case "$TARGETARCH" in \
      "$(go env GOHOSTARCH)") ;; \
      arm64) pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross" ;; \
      amd64) pkgs="gcc-x86-64-linux-gnu libc6-dev-amd64-cross" ;; \
      *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; \
    esac; \
    if [ -n "${pkgs:-}" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $pkgs && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
# Dependencies first: this layer is reused while only Tessera's code changes.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
ARG GIT_COMMIT
ARG BUILD_DATE
# hack/build.sh is what builds the daemons everywhere: static extender and
# webhook, the device plugin with cgo (go-nvml loads the driver's
# libnvidia-ml.so with dlopen at run time, and the NVIDIA container toolkit
# mounts it, so the image ships no NVIDIA library), all stamped with the
# version.
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH TESSERA_BUILD_SCHEDULER=true hack/build.sh /out

# distroless/base has glibc (for the device plugin) and nothing else: no
# shell, no package manager. Its default user is nonroot (65532); the chart
# runs the device plugin as root, which the kubelet's socket directory needs.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tessera-extender"]
