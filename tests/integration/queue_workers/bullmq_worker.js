// The BullMQ Worker of the queue target's tests (node, bullmq from hack/node by NODE_PATH): it
// runs the jobs of the queue $BULLMQ_QUEUE on the broker $REDIS_URL and records the slot and
// scheduled time each job's opts carried, one JSON line per run in $RECORD_FILE, as
// queue_workers/record.py does for the Python frameworks.
"use strict";
const fs = require("fs");
const { Worker } = require("bullmq");

const url = new URL(process.env.REDIS_URL);
const connection = {
  host: url.hostname,
  port: Number(url.port || 6379),
  password: url.password ? decodeURIComponent(url.password) : undefined,
  db: Number(url.pathname.slice(1) || 0),
  maxRetriesPerRequest: null,
};

const worker = new Worker(
  process.env.BULLMQ_QUEUE,
  async (job) => {
    const startedAt = Date.now() / 1000;
    const line = JSON.stringify({
      framework: "bullmq",
      slot: job.opts.punctual_slot || "",
      scheduledTime: job.opts.punctual_scheduled_time || "",
      args: [job.data.args || [], { name: job.name }, job.id],
      startedAt,
    });
    fs.appendFileSync(process.env.RECORD_FILE, line + "\n");
  },
  { connection, concurrency: 1 },
);
worker.on("failed", (job, error) => console.error(`job ${job && job.id} failed: ${error}`));
worker.on("error", (error) => console.error(`worker error: ${error}`));
process.on("SIGTERM", () => worker.close().then(() => process.exit(0)));
