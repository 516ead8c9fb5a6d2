package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"kylix/core/kx"
	"regexp"
	"sort"
	"strings"
)

// command is one `kylix` command. A command joins the tool with one register call in an init
// function of its own file; `kylix help`, `kylix NAME -h`, the flag errors and the tests of
// every command's help come from this entry:
//
//	func init() {
//		register(&command{Name: "timeline", Args: "DIR", NArgs: 1,
//			Purpose: "merge the ranks' timeline files of DIR and draw them",
//			Example: "kylix timeline /tmp/tl", Setup: timelineSetup})
//	}
type command struct {
	Name     string   // what follows `kylix`
	Args     string   // the synopsis after the name: required flags, positional arguments
	Purpose  string   // one line for `kylix help`, starting in lower case, no full stop
	Details  string   // what `kylix NAME -h` says before the flags: what it prints, and how
	Example  string   // command lines for `kylix NAME -h`, one a line
	Required []string // flags (without dashes) the command cannot run without
	NArgs    int      // positional arguments: exactly this many
	// Setup defines the command's flags on fs (each usage names its unit; a `quoted` word is
	// the value's placeholder in the help) and returns what runs once they are parsed, given
	// the positional arguments and where to print.
	Setup func(fs *flag.FlagSet) func(w io.Writer, args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if c.Name == "" || c.Purpose == "" || c.Example == "" || c.Setup == nil || commands[c.Name] != nil {
		panic("kylix: command " + c.Name + " registered twice or without a purpose, example or setup")
	}
	commands[c.Name] = c
}

func lookup(name string) *command { return commands[name] }

// sortedCommands is the command table in name order, as `kylix help` lists it.
func sortedCommands() []*command {
	cs := make([]*command, 0, len(commands))
	for _, c := range commands {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

func toolHelp() string {
	var b strings.Builder
	b.WriteString("kylix: plan, simulate and measure Kylix sparse allreduce jobs.\n\nusage: kylix <command> [flags] [arguments]\n\ncommands:\n")
	for _, c := range sortedCommands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.Name, c.Purpose)
	}
	b.WriteString(`
  kylix <command> -h   the command's flags with units and defaults, and an example
  kylix help <command> the same
  kylix --version      print the version (also: kylix version)

Flags take one dash or two (-ranks 8, --ranks 8, --ranks=8). Exit status: 0 on success, 1 when
the command fails, 2 on a usage mistake.
`)
	return b.String()
}

// newFlagSet is the command's flag set, quiet: the tool prints help and errors itself.
func (c *command) newFlagSet() (*flag.FlagSet, func(io.Writer, []string) error) {
	fs := flag.NewFlagSet("kylix "+c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs, c.Setup(fs)
}

// help is `kylix NAME -h`: usage, purpose and details, every flag with its placeholder,
// meaning, unit and default, then the example.
func (c *command) help() string {
	fs, _ := c.newFlagSet()
	var b strings.Builder
	fmt.Fprintf(&b, "usage: kylix %s %s\n\n", c.Name, c.Args)
	b.WriteString(wrap("", strings.ToUpper(c.Purpose[:1])+c.Purpose[1:]+".", "", 96))
	if c.Details != "" {
		b.WriteString("\n" + strings.TrimRight(c.Details, "\n") + "\n")
	}
	var req, opt []*flag.Flag // the required ones first, in the order the synopsis gives them
	for _, r := range c.Required {
		req = append(req, fs.Lookup(r))
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !c.required(f.Name) {
			opt = append(opt, f)
		}
	})
	if len(req)+len(opt) > 0 {
		b.WriteString("\nflags:\n")
	}
	for _, f := range append(req, opt...) {
		ph, usage := flag.UnquoteUsage(f)
		left := "  --" + f.Name
		if ph != "" {
			left += " " + ph
		}
		switch {
		case c.required(f.Name):
			usage += " (required)"
		case !strings.Contains(usage, "(default") && !isZeroDefault(f):
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		pad := strings.Repeat(" ", 24)
		if len(left) > 22 {
			b.WriteString(left + "\n" + wrap(pad, usage, pad, 96))
		} else {
			b.WriteString(wrap(fmt.Sprintf("%-24s", left), usage, pad, 96))
		}
	}
	b.WriteString("\nexample:\n")
	for _, l := range strings.Split(strings.TrimSpace(c.Example), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func (c *command) required(name string) bool {
	for _, r := range c.Required {
		if r == name {
			return true
		}
	}
	return false
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false":
		return true
	}
	return false
}

// wrap appends text's words to first (a line's start, such as the flag column) and breaks
// them into lines of at most width columns; lines after the first start with indent.
func wrap(first, text, indent string, width int) string {
	var b strings.Builder
	line, empty := first, true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	return b.String() + line + "\n"
}

// usageError is a command-line mistake: exit status 2, and a pointer to the help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// run parses the command's flags, checks the required ones and the positional arguments, and
// runs it. Every message names the flag as the help writes it, with two dashes.
func (c *command) run(args []string, stdout, stderr io.Writer) int {
	fs, body := c.newFlagSet()
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, c.help())
		return 0
	}
	if err == nil {
		err = c.checkArgs(fs)
	}
	if err == nil {
		err = body(stdout, fs.Args())
	}
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "kylix %s: %s\n(kylix %s -h lists the flags)\n", c.Name, ue.msg, c.Name)
		return 2
	}
	if ue := flagError(fs, err); ue != nil {
		fmt.Fprintf(stderr, "kylix %s: %s\n(kylix %s -h lists the flags)\n", c.Name, ue.msg, c.Name)
		return 2
	}
	fmt.Fprintf(stderr, "kylix %s: %v\n", c.Name, err)
	return 1
}

func (c *command) checkArgs(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var missing []string
	for _, r := range c.Required {
		if !given[r] {
			ph, usage := flag.UnquoteUsage(fs.Lookup(r))
			missing = append(missing, fmt.Sprintf("\n  --%s %s: %s", r, ph, usage))
		}
	}
	if len(missing) == 1 {
		return usagef("a required flag is missing:%s", missing[0])
	}
	if len(missing) > 1 {
		return usagef("%d required flags are missing:%s", len(missing), strings.Join(missing, ""))
	}
	if fs.NArg() > c.NArgs {
		return usagef("unexpected argument %q (usage: kylix %s %s)", fs.Arg(c.NArgs), c.Name, c.Args)
	}
	if fs.NArg() < c.NArgs {
		return usagef("missing argument (usage: kylix %s %s)", c.Name, c.Args)
	}
	return nil
}

var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reInvalid   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): `)
	reNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewrites the flag package's complaints into messages that name the flag with two
// dashes and say what it wants; nil for an error that is not the flag package's.
func flagError(fs *flag.FlagSet, err error) *usageError {
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(fs, m[1]); near != "" {
			return &usageError{fmt.Sprintf("unknown flag --%s (did you mean --%s?)", m[1], near)}
		}
		return &usageError{fmt.Sprintf("unknown flag --%s", m[1])}
	}
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			return &usageError{fmt.Sprintf("--%s %q: want %s", m[2], m[1], kindOf(f))}
		}
	}
	if m := reNoValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil {
			ph, _ := flag.UnquoteUsage(f)
			return &usageError{fmt.Sprintf("--%s needs a value: --%s %s", m[1], m[1], ph)}
		}
	}
	if strings.HasPrefix(msg, "bad flag syntax") {
		return &usageError{msg}
	}
	return nil
}

// kindOf says what a flag's value must look like.
func kindOf(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch g.Get().(type) {
	case float64:
		return "a number such as 1e7 or 0.25"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number >= 0"
	case bool:
		return "true or false (or the flag alone)"
	}
	return "a valid value"
}

// nearestFlag is the defined flag closest to name in edit distance when close enough to be a
// slip (a third of its letters), or the one flag name starts.
func nearestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return nearest(name, names)
}

func commandHint(name string) string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if near := nearest(name, names); near != "" {
		return fmt.Sprintf(" (did you mean %s?)", near)
	}
	return ""
}

func nearest(name string, names []string) string {
	best, bestD := "", 1+len(name)/3
	var prefixOf []string
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			prefixOf = append(prefixOf, n)
		}
		if d := kx.EditDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" && len(prefixOf) == 1 {
		return prefixOf[0]
	}
	return best
}
