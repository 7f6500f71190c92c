"""What a task run records: one JSON line per run, appended atomically (one ``write`` of a line
shorter than the pipe buffer to a file opened for appending)."""

import json
import os
import time


def record(framework: str, slot: str, scheduled_time: str, args: list[object]) -> None:
    line = json.dumps(
        {
            "framework": framework,
            "slot": slot,
            "scheduledTime": scheduled_time,
            "args": args,
            "startedAt": time.time(),
        }
    )
    with open(os.environ["RECORD_FILE"], "a") as file:
        file.write(line + "\n")
