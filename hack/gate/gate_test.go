package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseReadsEachCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want Invocation
	}{
		{"install copies to a path", []string{"install", "/punctual-gate/gate"}, Invocation{Verb: Install, Destination: "/punctual-gate/gate"}},
		{"noop", []string{"noop"}, Invocation{Verb: Noop}},
		{"wait reads an absolute instant", []string{"wait", "--at", "1796130000123"}, Invocation{Verb: Wait, ReleaseAt: time.UnixMilli(1796130000123)}},
		{"exec keeps the command and its arguments as given", []string{"--at", "1796130000000", "--", "python3", "-c", "print(1)", "--at"}, Invocation{Verb: Exec, ReleaseAt: time.UnixMilli(1796130000000), Command: []string{"python3", "-c", "print(1)", "--at"}}},
		{"exec of a path", []string{"--at", "5", "--", "/app/run"}, Invocation{Verb: Exec, ReleaseAt: time.UnixMilli(5), Command: []string{"/app/run"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.args)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}
}

func TestParseRefusesABadCommandLineNamingTheArgument(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		argument string
	}{
		{"nothing", nil, "command"},
		{"an unknown command", []string{"sleep", "5"}, `"sleep"`},
		{"install without a destination", []string{"install"}, "install DEST"},
		{"install with an empty destination", []string{"install", ""}, "install DEST"},
		{"install with more", []string{"install", "/a", "/b"}, `"/b"`},
		{"noop with more", []string{"noop", "now"}, `"now"`},
		{"wait without --at", []string{"wait"}, "--at"},
		{"wait with --at and no instant", []string{"wait", "--at"}, "--at"},
		{"wait with a duration", []string{"wait", "--at", "30s"}, "--at"},
		{"wait with a fraction", []string{"wait", "--at", "1.5"}, "--at"},
		{"wait at zero", []string{"wait", "--at", "0"}, "--at"},
		{"wait at a negative instant", []string{"wait", "--at", "-1"}, "--at"},
		{"wait past int64", []string{"wait", "--at", "99999999999999999999"}, "--at"},
		{"wait with more", []string{"wait", "--at", "5", "--", "x"}, `"--"`},
		{"exec without --", []string{"--at", "5", "python3"}, "--"},
		{"exec without a command", []string{"--at", "5", "--"}, "COMMAND"},
		{"exec with an empty command", []string{"--at", "5", "--", ""}, "COMMAND"},
		{"exec with a bad instant", []string{"--at", "soon", "--", "x"}, "--at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.args)
			if err == nil || !IsUsage(err) {
				t.Fatalf("Parse(%q) = %v, want a usage error", tc.args, err)
			}
			if got := err.(*UsageError).Argument; got != tc.argument {
				t.Fatalf("Parse(%q) names %q, want %q (%v)", tc.args, got, tc.argument, err)
			}
			if !strings.HasPrefix(err.Error(), tc.argument+": ") {
				t.Fatalf("the message %q does not start with the argument %q", err, tc.argument)
			}
		})
	}
}

// fakeClock is a wall clock that advances only when slept on, plus steps made at given sleeps
// (as NTP or a resumed VM would step a node's clock).
type fakeClock struct {
	now   time.Time
	slept []time.Duration
	steps map[int]time.Duration // after the n-th sleep (1-based), the clock jumps by this much
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(d time.Duration) {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d + c.steps[len(c.slept)])
}

var slot = time.UnixMilli(1796130000000)

func TestSleepUntilSleepsInChunksOfAtMostOneSecondUntilTheInstant(t *testing.T) {
	clock := &fakeClock{now: slot.Add(-2500 * time.Millisecond)}

	released := SleepUntil(clock, slot)

	want := []time.Duration{time.Second, time.Second, 500 * time.Millisecond}
	if !reflect.DeepEqual(clock.slept, want) {
		t.Fatalf("slept %v, want %v", clock.slept, want)
	}
	if !released.Equal(slot) {
		t.Fatalf("released at %v, want %v", released, slot)
	}
}

func TestSleepUntilFollowsAClockStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  time.Duration
		slept []time.Duration
	}{
		// 10 s before the slot, the clock jumps 8 s forward after the first second: 1 s left.
		{"forward: released earlier by the clock's time", 8 * time.Second, []time.Duration{time.Second, time.Second}},
		// 3 s before, it jumps 2 s back after the first second: 4 s left instead of 2.
		{"back: released later by the clock's time", -2 * time.Second, []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := slot.Add(-10 * time.Second)
			if tc.step < 0 {
				start = slot.Add(-3 * time.Second)
			}
			clock := &fakeClock{now: start, steps: map[int]time.Duration{1: tc.step}}

			released := SleepUntil(clock, slot)

			if !reflect.DeepEqual(clock.slept, tc.slept) {
				t.Fatalf("slept %v, want %v", clock.slept, tc.slept)
			}
			if released.Before(slot) {
				t.Fatalf("released at %v, before the slot %v", released, slot)
			}
		})
	}
}

func TestSleepUntilReleasesAtOnceWhenTheInstantIsPastOrNow(t *testing.T) {
	for _, now := range []time.Time{slot, slot.Add(time.Millisecond), slot.Add(time.Hour)} {
		clock := &fakeClock{now: now}

		released := SleepUntil(clock, slot)

		if len(clock.slept) != 0 || !released.Equal(now) {
			t.Fatalf("at %v: slept %v, released at %v", now, clock.slept, released)
		}
	}
}

func TestSleepUntilIgnoresTheMonotonicReading(t *testing.T) {
	// A reading taken now carries a monotonic part; the instant, from milliseconds, has none.
	// Their difference must be the wall clock's, whatever the monotonic clock says.
	now := time.Now()
	clock := &fakeClock{now: now}

	SleepUntil(clock, now.Round(0).Add(1500*time.Millisecond))

	want := []time.Duration{time.Second, 500 * time.Millisecond}
	if !reflect.DeepEqual(clock.slept, want) {
		t.Fatalf("slept %v, want %v", clock.slept, want)
	}
}

func TestReleaseLineSaysWhenItWasDueAndWhenItHappened(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"on time", slot, `{"punctualGate":"released","releaseAtMs":1796130000000,"nodeClockMs":1796130000000,"lateMs":0}` + "\n"},
		{"late", slot.Add(1234 * time.Millisecond), `{"punctualGate":"released","releaseAtMs":1796130000000,"nodeClockMs":1796130001234,"lateMs":1234}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReleaseLine(slot, tc.now); got != tc.want {
				t.Fatalf("ReleaseLine = %q, want %q", got, tc.want)
			}
		})
	}
}
