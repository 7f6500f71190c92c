#!/bin/sh
# Starts one member of the bundled Sentinel-managed Redis (redis.bundled.sentinel.enabled): its
# redis-server ("server") or its redis-sentinel ("sentinel"), each in a container of the same
# StatefulSet pod. Every member is named by its pod's stable DNS name, never by its IP address,
# so a restarted pod (a new IP) is the same member to the others (Sentinel's resolve-hostnames
# and announce-hostnames).
#
# Which server is the primary is the Sentinels' to say: a member starting asks each Sentinel in
# turn and follows the primary the first that answers names. When none answers (the first start,
# or every pod restarted at once), pod 0 is the primary. A server the Sentinels still name as the
# primary has restarted empty: it waits for them to promote a replica, which kept the claims,
# and follows it; if they promote none in time, it starts as the primary, and the claims it
# forgot are counted missed, never run twice (docs/replicas-and-locks.md, A Redis that forgets).
#
# The password (REDISCLI_AUTH, from the bundled auth Secret) reaches the servers and Sentinels
# in a configuration file written to an in-memory volume, never on a command line; Sentinel
# and `CONFIG REWRITE` after a failover rewrite that file.
#
# Environment: POD_NAME, HEADLESS (the StatefulSet's Service, as <name>.<namespace>.svc),
# MEMBERS, SERVICE (the Sentinels' name for the primary), REDIS_PORT, SENTINEL_PORT, QUORUM,
# DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS, REDISCLI_AUTH; CONFIG_DIR (default /run/redis).
set -eu
role=${1:-}
case $role in
server | sentinel) shift ;;
*)
  echo "usage: $0 server|sentinel [redis-server arguments...]" >&2
  exit 2
  ;;
esac
config_dir=${CONFIG_DIR:-/run/redis}
me="$POD_NAME.$HEADLESS"
statefulset=${POD_NAME%-*}
umask 077

# The primary the first answering Sentinel names, as "host port"; empty when none answers.
named_primary() {
  member=0
  while [ "$member" -lt "$MEMBERS" ]; do
    # shellcheck disable=SC2046 # the reply's two lines are the host and the port
    set -- $(timeout 2 redis-cli --no-auth-warning -h "$statefulset-$member.$HEADLESS" \
      -p "$SENTINEL_PORT" SENTINEL get-master-addr-by-name "$SERVICE" 2>/dev/null || true)
    if [ $# -eq 2 ]; then
      echo "$1 $2"
      return
    fi
    member=$((member + 1))
  done
}

primary=$(named_primary)
if [ "$role" = server ]; then
  # Twice down-after-milliseconds: time for the Sentinels to see this server down and promote a
  # replica. At most 30 s, within what the liveness probe allows a server not yet listening.
  wait_seconds=$((DOWN_AFTER_MS * 2 / 1000))
  if [ "$wait_seconds" -gt 30 ]; then
    wait_seconds=30
  fi
  deadline=$(($(date +%s) + wait_seconds))
  while [ "$primary" = "$me $REDIS_PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    echo "the Sentinels still name this restarted server the primary: waiting for a failover" >&2
    sleep 1
    primary=$(named_primary)
  done
fi
if [ -z "$primary" ]; then
  primary="$statefulset-0.$HEADLESS $REDIS_PORT"
fi

case $role in
server)
  {
    printf 'requirepass %s\nmasterauth %s\n' "$REDISCLI_AUTH" "$REDISCLI_AUTH"
    printf 'replica-announce-ip %s\n' "$me"
    if [ "$primary" != "$me $REDIS_PORT" ]; then
      printf 'replicaof %s\n' "$primary"
    fi
  } >"$config_dir/redis.conf"
  exec redis-server "$config_dir/redis.conf" "$@"
  ;;
sentinel)
  {
    printf 'port %s\n' "$SENTINEL_PORT"
    printf 'sentinel resolve-hostnames yes\nsentinel announce-hostnames yes\n'
    printf 'sentinel announce-ip %s\n' "$me"
    # Clients and the other Sentinels authenticate with the servers' password.
    printf 'requirepass %s\nsentinel sentinel-pass %s\n' "$REDISCLI_AUTH" "$REDISCLI_AUTH"
    printf 'sentinel monitor %s %s %s\n' "$SERVICE" "$primary" "$QUORUM"
    printf 'sentinel auth-pass %s %s\n' "$SERVICE" "$REDISCLI_AUTH"
    printf 'sentinel down-after-milliseconds %s %s\n' "$SERVICE" "$DOWN_AFTER_MS"
    printf 'sentinel failover-timeout %s %s\n' "$SERVICE" "$FAILOVER_TIMEOUT_MS"
    printf 'sentinel parallel-syncs %s 1\n' "$SERVICE"
  } >"$config_dir/sentinel.conf"
  exec redis-sentinel "$config_dir/sentinel.conf" "$@"
  ;;
esac
