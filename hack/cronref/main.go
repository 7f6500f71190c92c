// Command cronref answers, for each line of its input, what CronJob's own cron library
// (robfig/cron v3, parsed as kube-controller-manager parses a CronJob's schedule) makes of a
// schedule: the next fire times after an instant in a zone, or why it refuses the schedule.
// The convert differential (tests/unit/api/test_convert_differential.py) compares those answers
// with the slots Punctual plans for the ScheduledJob that `punctual convert` writes.
//
// Input, one request a line, tab-separated: zone, instant (RFC 3339), count, expression.
// Output, one line each: "ok" and the fire times (RFC 3339, UTC, tab-separated; fewer than
// count when the library finds none within its five-year search), or "error" and the reason.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		fmt.Fprintln(out, answer(in.Text()))
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "cronref:", err)
		os.Exit(2)
	}
}

func answer(line string) string {
	parts := strings.SplitN(line, "\t", 4)
	if len(parts) != 4 {
		return "error\tbad request: want zone, instant, count, expression"
	}
	zone, err := time.LoadLocation(parts[0])
	if err != nil {
		return "error\tzone: " + err.Error()
	}
	after, err := time.Parse(time.RFC3339, parts[1])
	if err != nil {
		return "error\tinstant: " + err.Error()
	}
	count, err := strconv.Atoi(parts[2])
	if err != nil || count < 0 {
		return "error\tbad count"
	}
	// As the CronJob controller: the zone is the CronJob's timeZone, given to the schedule.
	schedule, err := cron.ParseStandard("CRON_TZ=" + parts[0] + " " + parts[3])
	if err != nil {
		return "error\t" + strings.ReplaceAll(err.Error(), "\t", " ")
	}
	fields := []string{"ok"}
	at := after.In(zone)
	for range count {
		at = schedule.Next(at)
		if at.IsZero() {
			break
		}
		fields = append(fields, at.UTC().Format(time.RFC3339))
	}
	return strings.Join(fields, "\t")
}
