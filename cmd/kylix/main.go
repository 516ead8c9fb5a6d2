// Command kylix is the companion tool of the Kylix library: `kylix plan` prints the degrees
// the planner picks for a data set and cluster and what the cost model predicts, `kylix
// simulate` runs the real core on virtual ranks in memory beside that prediction, and `kylix
// bench` measures a real job under kylixrun. `kylix help` lists the commands; each command's
// -h gives its flags with units and defaults, and an example.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole tool behind main: the exit status is 0 on success (help and version
// included), 1 when a command fails, 2 on a usage mistake.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, toolHelp())
		return 2
	}
	switch name := args[0]; name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				fmt.Fprint(stdout, c.help())
				return 0
			}
			fmt.Fprintf(stderr, "kylix help: unknown command %q%s\n", args[1], commandHint(args[1]))
			return 2
		}
		fmt.Fprint(stdout, toolHelp())
		return 0
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "kylix %s\n", version)
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "kylix: unknown command %q%s (kylix help lists the commands)\n", args[0], commandHint(args[0]))
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}
