# The job Sidekiq's own worker runs in the queue target's tests (`sidekiq -r <this file>`, its
# broker $REDIS_URL): it records the slot and scheduled time its job carried, one JSON line per
# run in $RECORD_FILE, as queue_workers/record.py does for the Python frameworks. A server
# middleware hands the job's own fields (punctual_slot, punctual_scheduled_time) to the job, as a
# user's would.
require "json"
require "sidekiq"

class PunctualFields
  def call(_worker, job, _queue)
    Thread.current[:punctual_job] = job
    yield
  ensure
    Thread.current[:punctual_job] = nil
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add PunctualFields }
end

module Tests
  class RecordSlot
    include Sidekiq::Worker

    def perform(*args)
      started = Time.now.to_f
      job = Thread.current[:punctual_job]
      line = JSON.dump(
        "framework" => "sidekiq",
        "slot" => job.fetch("punctual_slot", ""),
        "scheduledTime" => job.fetch("punctual_scheduled_time", ""),
        "args" => [args, {}, jid],
        "startedAt" => started,
      )
      File.open(ENV.fetch("RECORD_FILE"), "a") { |file| file.write(line + "\n") }
    end
  end
end
