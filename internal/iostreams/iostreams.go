// Package iostreams is the IO abstraction commands write through: output,
// diagnostics, terminal detection, colour and confirmation prompts.
package iostreams

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// IO bundles a command's streams and what is known about them.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// OutTTY and ErrTTY tell whether the streams are terminals (live redraw,
	// aligned tables); InTTY whether prompting is possible.
	InTTY, OutTTY, ErrTTY bool
	// Color is false under --no-color or NO_COLOR, or when ErrOut is not a terminal.
	Color bool
	// Width is what a table on Out must fit, in columns: COLUMNS, else
	// the terminal's width; 0 (no limit) for a pipe or a file.
	Width int
}

// System returns the process's standard streams.
func System() *IO {
	isTTY := func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
	_, noColor := os.LookupEnv("NO_COLOR")
	ios := &IO{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY: isTTY(os.Stdin), OutTTY: isTTY(os.Stdout), ErrTTY: isTTY(os.Stderr),
		Color: !noColor && isTTY(os.Stderr),
	}
	ios.Width = Width(os.Getenv("COLUMNS"), ios.OutTTY, func() (int, error) {
		w, _, err := term.GetSize(int(os.Stdout.Fd()))
		return w, err
	})
	return ios
}

// Test returns streams backed by buffers, none of them a terminal.
func Test() (*IO, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IO{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// Confirm asks a yes/no question on the terminal. It returns false when the
// answer is anything but y/yes, and ctx's error as soon as ctx is done
// (Ctrl-C), without waiting for a line.
func (s *IO) Confirm(ctx context.Context, question string) (bool, error) {
	fmt.Fprintf(s.ErrOut, "%s [y/N]: ", question)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		// On Ctrl-C this read stays blocked; the process exits around it.
		line, err := bufio.NewReader(s.In).ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		// The terminal echoed ^C, not a newline: end the prompt's line.
		fmt.Fprintln(s.ErrOut)
		return false, ctx.Err()
	case a = <-got:
	}
	if a.err != nil {
		// End of input (Ctrl-D) echoes no newline either.
		fmt.Fprintln(s.ErrOut)
		if a.err != io.EOF {
			return false, fmt.Errorf("reading the answer: %w", a.err)
		}
	}
	switch strings.ToLower(strings.TrimSpace(a.line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
