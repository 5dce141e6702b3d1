package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxPasswordBytes bounds a password read from a file or stdin.
const maxPasswordBytes = 64 << 10

// ReadPassword is the password of a command that needs one, never from
// a flag's value (which shell history and ps show): the first line of
// the file at path when path is set ("-" is stdin), else, when stdin is
// a terminal, a prompt on stderr with echo off, else the first line of
// stdin. The line's "\n" (and "\r") are not part of it; an empty
// password is an error.
func ReadPassword(path string, stdin io.Reader, stderr io.Writer) (string, error) {
	var pw string
	var err error
	switch {
	case path != "" && path != "-":
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		pw, err = readLine(f)
		_ = f.Close()
	default:
		if f, isFile := stdin.(*os.File); isFile && path == "" {
			line, terminal, terr := readPasswordNoEcho(f, stderr)
			if terminal {
				pw, err = line, terr
				break
			}
		}
		pw, err = readLine(stdin)
	}
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	if pw == "" {
		return "", errors.New("the password is empty (give it with --password-file, on stdin, or at the prompt)")
	}
	return pw, nil
}

// readLine is r's first line without its line ending, at most
// maxPasswordBytes long.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxPasswordBytes+2), 4096).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if len(line) > maxPasswordBytes {
		return "", fmt.Errorf("longer than %d bytes", maxPasswordBytes)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
