# Sourced by the scripts that build the device plugin. go-nvml's cgo
# wrappers call every NVML function, the deprecated ones included, so a cold
# build of github.com/NVIDIA/go-nvml prints screens of
# -Wdeprecated-declarations warnings that a newcomer reads as errors. The
# only cgo packages Tessera builds are go-nvml's and the standard library's,
# so the flag reaches nothing else. Go's own default flags are kept.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
