package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// fdDiff names what a process held at its end and not warm, by kind: a connection or pipe
// made again is the same kind, a pidfd or a shared-memory mapping more is named.
func TestFdDiff(t *testing.T) {
	list := `warm:
0 /dev/null
1 pipe:[100]
7 socket:[200] tcp 0100007F:9C40 0100007F:A0B2 st 01
8 anon_inode:[eventfd] id 3
9 anon_inode:[pidfd] pid 4242
maps 2 memfd:kylix-shm
done:
0 /dev/null
1 pipe:[300]
7 socket:[400] tcp 0100007F:9C41 0100007F:A0B3 st 01
8 anon_inode:[eventfd] id 5
9 anon_inode:[pidfd] pid 4242
10 anon_inode:[pidfd] pid -1
11 anon_inode:[pidfd] pid 4343
maps 3 memfd:kylix-shm
`
	path := filepath.Join(t.TempDir(), "fds-1")
	if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "; more than warm: [1 x mapping of a memfd:kylix-shm, 1 x pidfd of a live process, 1 x pidfd of an exited process]; fewer: []"
	if got := fdDiff(path); got != want {
		t.Fatalf("fdDiff:\n got %s\nwant %s", got, want)
	}
	if got := fdDiff(filepath.Join(t.TempDir(), "none")); got != "" {
		t.Fatalf("no lists: %q, want nothing", got)
	}
}
