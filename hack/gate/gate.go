package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Verb is what one invocation of the gate does.
type Verb int

const (
	// Install copies the gate to a path: the first init container, into the pod's emptyDir.
	Install Verb = iota
	// Noop exits at once: run in the user's image, it makes the kubelet pull that image early.
	Noop
	// Wait sleeps until the release instant, then exits: the last init container (Init mode).
	Wait
	// Exec sleeps until the release instant, then becomes the command (Exec mode).
	Exec
)

// Invocation is the command line, parsed.
type Invocation struct {
	Verb Verb
	// Destination is where Install copies the gate.
	Destination string
	// ReleaseAt is the instant Wait and Exec release at.
	ReleaseAt time.Time
	// Command is what Exec becomes: the program (a path, or a name looked up in PATH) and its
	// arguments, as the container would have run them.
	Command []string
}

// UsageError is a command line the gate refuses; Argument names the part that is wrong.
type UsageError struct {
	Argument string
	Problem  string
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("%s: %s", e.Argument, e.Problem)
}

// Usage is the command line the gate understands.
const Usage = `usage:
  gate install DEST                 copy the gate to DEST (mode 0555)
  gate noop                         exit 0 at once
  gate wait --at MS                 exit 0 once the wall clock reaches MS
  gate --at MS -- COMMAND [ARG...]  then execve COMMAND (looked up in PATH if it has no slash)
MS is the release instant in milliseconds since the Unix epoch, never a duration.`

// Parse reads the arguments after the program's name. The release instant is absolute, not a
// duration: a container started (or restarted) late still releases at the same moment, and one
// started after it releases at once.
func Parse(args []string) (Invocation, error) {
	if len(args) == 0 {
		return Invocation{}, &UsageError{Argument: "command", Problem: "missing (install, noop, wait or --at)"}
	}
	switch args[0] {
	case "install":
		if len(args) < 2 || args[1] == "" {
			return Invocation{}, &UsageError{Argument: "install DEST", Problem: "DEST is missing"}
		}
		if err := noMore(args[2:]); err != nil {
			return Invocation{}, err
		}
		return Invocation{Verb: Install, Destination: args[1]}, nil
	case "noop":
		if err := noMore(args[1:]); err != nil {
			return Invocation{}, err
		}
		return Invocation{Verb: Noop}, nil
	case "wait":
		at, rest, err := releaseAt(args[1:])
		if err != nil {
			return Invocation{}, err
		}
		if err := noMore(rest); err != nil {
			return Invocation{}, err
		}
		return Invocation{Verb: Wait, ReleaseAt: at}, nil
	case "--at":
		at, rest, err := releaseAt(args)
		if err != nil {
			return Invocation{}, err
		}
		if len(rest) == 0 || rest[0] != "--" {
			return Invocation{}, &UsageError{Argument: "--", Problem: "expected after --at MS, before the command"}
		}
		if len(rest) == 1 || rest[1] == "" {
			return Invocation{}, &UsageError{Argument: "COMMAND", Problem: "missing after --"}
		}
		return Invocation{Verb: Exec, ReleaseAt: at, Command: rest[1:]}, nil
	default:
		return Invocation{}, &UsageError{Argument: strconv.Quote(args[0]), Problem: "unknown command (install, noop, wait or --at)"}
	}
}

// releaseAt reads "--at MS" at the head of args and returns what follows it.
func releaseAt(args []string) (time.Time, []string, error) {
	if len(args) == 0 || args[0] != "--at" {
		return time.Time{}, nil, &UsageError{Argument: "--at", Problem: "missing"}
	}
	if len(args) < 2 {
		return time.Time{}, nil, &UsageError{Argument: "--at", Problem: "needs MS, milliseconds since the Unix epoch"}
	}
	ms, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, nil, &UsageError{
			Argument: "--at",
			Problem:  fmt.Sprintf("%s is not a positive whole number of milliseconds since the Unix epoch", strconv.Quote(args[1])),
		}
	}
	return time.UnixMilli(ms), args[2:], nil
}

func noMore(rest []string) error {
	if len(rest) > 0 {
		return &UsageError{Argument: strconv.Quote(rest[0]), Problem: "unexpected argument"}
	}
	return nil
}

// IsUsage tells a refused command line from a failure.
func IsUsage(err error) bool {
	var usage *UsageError
	return errors.As(err, &usage)
}

// Clock is the wall clock and a way to sleep on it; the tests give a fake one.
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// MaxChunk is the longest single sleep. Sleeping in chunks and reading the wall clock again after
// each is what makes a step of the node's clock (NTP correcting it, a VM resumed) move the release:
// one long sleep runs on the monotonic clock and would release by the clock as it was at the start.
const MaxChunk = time.Second

// SleepUntil returns once the wall clock reads at least releaseAt, with that reading. An instant
// already past returns at once: a container restarted after its release runs without waiting.
func SleepUntil(clock Clock, releaseAt time.Time) time.Time {
	for {
		now := clock.Now()
		// Round(0) drops the monotonic reading, so the difference is taken on the wall clock.
		left := releaseAt.Round(0).Sub(now.Round(0))
		if left <= 0 {
			return now
		}
		clock.Sleep(min(left, MaxChunk))
	}
}

// ReleaseLine is the one line printed at release: when it was due and when it happened, in
// milliseconds by the node's clock, so a pod's log says how late its container started.
func ReleaseLine(releaseAt, now time.Time) string {
	due, clock := releaseAt.UnixMilli(), now.UnixMilli()
	return fmt.Sprintf(`{"punctualGate":"released","releaseAtMs":%d,"nodeClockMs":%d,"lateMs":%d}`+"\n", due, clock, clock-due)
}
