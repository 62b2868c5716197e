package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set at link time, is the release version every CLI
// reports:
//
//	go build -ldflags "-X github.com/llmkernels/kernels/internal/cli.version=v1.2.0" ./cmd/...
//
// Without it the version comes from the build information Go records: the
// module version (go install …@v1.2.0), or for a build from a checkout the
// pseudo-version and VCS revision Go stamps from git.
var version string

// Version describes this build in one line: version, VCS revision and time
// (with "modified" for uncommitted changes), the Go version and the
// platform, e.g.
//
//	v0.0.0-20261123120000-3f2a9c1d7e4b+dirty (commit 3f2a9c1d7e4b, 2026-11-23T12:00:00Z, modified; go1.26.8 linux/amd64)
func Version() string {
	info, _ := debug.ReadBuildInfo() // nil without build information, handled below
	return describe(version, info, runtime.GOOS+"/"+runtime.GOARCH)
}

func describe(linked string, info *debug.BuildInfo, platform string) string {
	v := linked
	var details []string
	goVersion := runtime.Version()
	if info != nil {
		goVersion = info.GoVersion
		if v == "" {
			v = info.Main.Version
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			details = append(details, "commit "+rev[:min(12, len(rev))])
		}
		if t := settings["vcs.time"]; t != "" {
			details = append(details, t)
		}
		if settings["vcs.modified"] == "true" {
			details = append(details, "modified")
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel" // built without module or VCS information (go run, a copied tree)
	}
	tail := goVersion + " " + platform
	if len(details) > 0 {
		tail = strings.Join(details, ", ") + "; " + tail
	}
	return fmt.Sprintf("%s (%s)", v, tail)
}
