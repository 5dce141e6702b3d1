package cli

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readPasswordNoEcho prompts on stderr and reads one line from the
// terminal f with echo off, restoring the terminal after. ok is false
// (and nothing is printed) when f is not a terminal.
func readPasswordNoEcho(f *os.File, stderr io.Writer) (line string, ok bool, err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", false, nil
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", true, err
	}
	defer func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }()
	fmt.Fprint(stderr, "Password: ")
	line, err = readLine(f)
	fmt.Fprintln(stderr)
	return line, true, err
}
