#!/usr/bin/env bash
# `make flights`: seed 004's live flights demo (docs/flights.md). Starts the MPI
# service (apps/flights) and the web front (apps/flights/web/front.py) and
# prints the page's address; Ctrl-C stops both.
#   scripts/flights.sh BUILD_DIR
# Environment: FLIGHTS_RANKS (4), FLIGHTS_PORT (8080, the page), FLIGHTS_CONTROL_PORT
# (7010, rank 0's control port), FLIGHTS_START (2013-07-01T12:00Z), FLIGHTS_SPEED
# (300 simulated seconds per second).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build}"
ranks="${FLIGHTS_RANKS:-4}"
port="${FLIGHTS_PORT:-8080}"
control="${FLIGHTS_CONTROL_PORT:-7010}"
start="${FLIGHTS_START:-2013-07-01T12:00Z}"
speed="${FLIGHTS_SPEED:-300}"

for need in "$build/apps/flights/flights" "$build/flights_data/flights.tsv" "$build/flights_web/vendor" \
            "$root/.venv/bin/python"; do
  [ -e "$need" ] || { echo "flights: $need is missing (make flights builds everything)" >&2; exit 1; }
done

# The control port answers only clients that send the token the service writes
# here (mode 0600, readable by this user alone); the front reads it.
token="$build/flights_control.token"
"$root/scripts/mpirun.sh" -n "$ranks" "$build/apps/flights/flights" --data "$build/flights_data" \
  --start "$start" --speed "$speed" --control-port "$control" --token-file "$token" &
service=$!
"$root/.venv/bin/python" "$root/apps/flights/web/front.py" --service-port "$control" --port "$port" \
  --assets "$build/flights_web" --service-token-file "$token" &
front=$!
stop() { kill -TERM "$front" "$service" 2>/dev/null || true; wait "$service" 2>/dev/null || true; }
trap stop INT TERM EXIT
echo "flights: open http://127.0.0.1:$port/ (Ctrl-C stops the demo)"
wait "$service"
