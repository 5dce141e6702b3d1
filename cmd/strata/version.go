package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=v0.1.0". Empty means a development build.
var version string

func init() {
	register("version", "print the version of this binary", func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintln(os.Stderr, "strata version takes no arguments")
			return exitUsage
		}
		fmt.Println(versionString())
		return exitOK
	})
}

// versionString is "strata <version> (<go version>)", with the VCS revision
// when the build recorded one.
func versionString() string {
	v := version
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if rev != "" {
		return fmt.Sprintf("strata %s %s (%s)", v, rev, runtime.Version())
	}
	return fmt.Sprintf("strata %s (%s)", v, runtime.Version())
}
