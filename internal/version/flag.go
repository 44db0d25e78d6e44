package version

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Flag is a binary's --version flag.
type Flag struct {
	program string
	set     bool
}

// AddFlag adds --version to fs for the named program.
func AddFlag(fs *pflag.FlagSet, program string) *Flag {
	f := &Flag{program: program}
	fs.BoolVar(&f.set, "version", false, "print the version and exit")
	return f
}

// Given reports whether --version was on the command line.
func (f *Flag) Given() bool { return f.set }

// Printed reports whether --version was given and, when it was, prints the
// program's version to w; the caller then exits with status 0.
func (f *Flag) Printed(w io.Writer) bool {
	if f.set {
		fmt.Fprintf(w, "%s %s\n", f.program, Get())
	}
	return f.set
}
