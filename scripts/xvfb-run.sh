#!/usr/bin/env bash
# Runs a command on a private X server: Xvfb on a free display number + the openbox window manager
# (windows get _NET_CLIENT_LIST entries and minimise/restore like on a desktop). Both stop with the command.
# Usage: scripts/xvfb-run.sh COMMAND [ARGS...]        (needs Debian xvfb openbox x11-utils)
set -euo pipefail
n=90
while [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
export DISPLAY=":$n"
Xvfb "$DISPLAY" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
wm_pid=
cleanup() {
    [ -n "$wm_pid" ] && kill "$wm_pid" 2>/dev/null || true
    kill "$xvfb_pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.1; done
[ -e "/tmp/.X11-unix/X$n" ] || { echo "error: Xvfb did not start on $DISPLAY" >&2; exit 1; }
openbox >/dev/null 2>&1 &
wm_pid=$!
for _ in $(seq 100); do xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' && break; sleep 0.1; done
"$@"
