package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time by hack/version.sh's -ldflags; the linker can only stamp
// package-level string variables, and nothing writes them at run time.
var (
	version   = "v0.0.0-devel"
	gitCommit = ""
	buildDate = ""
)

// Info describes the running binary.
type Info struct {
	// Version is the release, such as v0.1.0.
	Version string
	// GitCommit is the source commit, with "-dirty" when the tree had
	// uncommitted changes; "unknown" when neither the build scripts nor the
	// Go toolchain recorded it.
	GitCommit string
	// BuildDate is the commit's time in RFC 3339, "unknown" when not stamped.
	BuildDate string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Get returns the running binary's build information. A binary built
// without the build scripts (go build, go test) reports the commit the Go
// toolchain recorded, if any.
func Get() Info {
	info := Info{
		Version:   version,
		GitCommit: gitCommit,
		BuildDate: buildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.GitCommit == "" {
		info.GitCommit = vcsCommit()
	}
	if info.BuildDate == "" {
		info.BuildDate = "unknown"
	}
	return info
}

// vcsCommit is the commit go build recorded from the work tree.
func vcsCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var commit, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if commit == "" {
		return "unknown"
	}
	if modified == "true" {
		commit += "-dirty"
	}
	return commit
}

// String is the line --version prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.Version, i.GitCommit, i.BuildDate, i.GoVersion, i.Platform)
}
