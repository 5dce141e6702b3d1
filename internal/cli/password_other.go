//go:build !linux

package cli

import (
	"io"
	"os"
)

// readPasswordNoEcho reports that f is not a terminal it can silence: on
// this platform the password comes from --password-file or a pipe.
func readPasswordNoEcho(*os.File, io.Writer) (string, bool, error) { return "", false, nil }
