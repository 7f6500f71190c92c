// The gate of warm start: a container armed before its slot waits here, on the node's wall
// clock, and is released at the slot (docs/warm-start.md).
//
//	gate install DEST                 copy the gate to DEST (mode 0555)
//	gate noop                         exit 0 at once
//	gate wait --at MS                 exit 0 once the wall clock reaches MS
//	gate --at MS -- COMMAND [ARG...]  then execve COMMAND: same PID, same environment
//
// At release (wait and --at) it prints one JSON line on stdout. A command line it refuses is a
// message on stderr naming the argument, and exit status 2. Static, standard library only: it
// runs in any image (no shell, no libc), as any user, on a read-only root.
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	exitUsage       = 2
	exitFailed      = 1
	exitCannotExec  = 126 // as a shell says of a program it found but could not run
	exitNotFound    = 127 // as a shell says of a program it did not find
	exitSignalled   = 128 // plus the signal's number, as a shell reports a process it killed
	installFileMode = 0o555
)

func main() {
	invocation, err := Parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate: %v\n%s\n", err, Usage)
		os.Exit(exitUsage)
	}
	switch invocation.Verb {
	case Install:
		if err := install(invocation.Destination); err != nil {
			fail(exitFailed, "install: %v", err)
		}
	case Noop:
	case Wait:
		release(invocation.ReleaseAt)
	case Exec:
		// Looked up before the wait: a command that is not there fails now, not at the slot.
		program, err := lookPath(invocation.Command[0])
		if err != nil {
			fail(exitNotFound, "%s: %v", invocation.Command[0], err)
		}
		release(invocation.ReleaseAt)
		err = syscall.Exec(program, invocation.Command, os.Environ())
		fail(exitCannotExec, "%s: %v", invocation.Command[0], err)
	}
}

// release waits for the instant and prints the release line, written whole in one call (stdout
// is not buffered), so it is out before an exec replaces the process.
func release(at time.Time) {
	now := SleepUntil(wallClock(), at)
	_, _ = io.WriteString(os.Stdout, ReleaseLine(at, now))
}

// lookPath finds the program as a container runtime does: a name with a slash is a path, one
// without is looked up in PATH.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	return exec.LookPath(name)
}

// install copies this very binary next to dest and renames it there: a restarted init container
// replaces a file it left, which no one could open for writing at mode 0555.
func install(dest string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	partial, err := os.CreateTemp(filepath.Dir(dest), ".gate-*")
	if err != nil {
		return err
	}
	defer os.Remove(partial.Name())
	if _, err := io.Copy(partial, self); err != nil {
		partial.Close()
		return err
	}
	if err := partial.Chmod(installFileMode); err != nil {
		partial.Close()
		return err
	}
	if err := partial.Close(); err != nil {
		return err
	}
	return os.Rename(partial.Name(), dest)
}

func fail(status int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gate: "+format+"\n", args...)
	os.Exit(status)
}

// realClock sleeps on the runtime's timers, and ends the process on SIGTERM or SIGINT: a pod
// deleted before its release stops at once, whatever PID the gate has (as PID 1 a signal without
// a handler would be ignored).
type realClock struct{ signals chan os.Signal }

func wallClock() realClock {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	return realClock{signals: signals}
}

func (realClock) Now() time.Time { return time.Now() }

func (c realClock) Sleep(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case received := <-c.signals:
		os.Exit(exitSignalled + int(received.(syscall.Signal)))
	}
}
