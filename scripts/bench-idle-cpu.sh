#!/usr/bin/env bash
# Idle listening cost of the real app: `tomo run` (release) listening on the default microphone with
# nobody talking, its CPU read from /proc over a window after a warm-up. A benchmark, not a test.
# Usage: scripts/bench-idle-cpu.sh [profile.toml] [seconds]      (start scripts/pulse-null.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
profile="${1:-profiles/hana.toml}"
seconds="${2:-30}"
bin="$CARGO_TARGET_DIR/release/tomo"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p tomo-cli" >&2; exit 2; }
data="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$data"' EXIT
# No turn happens: the LLM address is never asked.
# stdin stays open (a terminal would), so `tomo run` keeps running on voice: a FIFO this shell holds open
# for writing (no helper process to leave behind when the script is killed).
mkfifo "$data/stdin"
exec 3<>"$data/stdin"
TOMO_LLM_BASE_URL=http://127.0.0.1:9/v1 TOMO_DATA_DIR="$data" "$bin" run \
    --profile "$profile" <"$data/stdin" >/dev/null 2>"$data/stderr" &
pid=$!
sleep 12
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$seconds"
after=$(ticks)
awk -v t="$((after - before))" -v hz="$hz" -v s="$seconds" \
    'BEGIN { printf "tomo run idle, %d s after a 12 s warm-up: %.1f %% of one core\n", s, t / hz / s * 100 }'
echo "RSS: $(awk '/VmRSS/ {print $2 / 1024 " MB"}' "/proc/$pid/status")"
grep -E "listening on|no microphone" "$data/stderr" || true
