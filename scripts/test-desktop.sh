#!/usr/bin/env bash
# The desktop app for real under Xvfb + openbox + xcompmgr (a compositor: pet mode's transparency needs one).
# 1. Normal mode: the window appears and the Live2D character is drawn (screenshot pixels differ from the
#    page background where the character stands). Alt+F4 quits: exit status 0, session shut down.
# 2. Pet mode (--pet): a backdrop window of a colour the UI never uses lies under the pet; the screenshot shows
#    that colour through most of the window (transparent) but not all of it (the character). Quits with 0 again, and the
#    pet's position was saved to the app config dir.
# Text mode (no models or sound needed); the LLM is never called (no turn is sent).
# Usage: scripts/test-desktop.sh   (after `cargo build -p tomo-desktop`; needs ui/dist built before that)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
bin="${TOMO_DESKTOP_BIN:-$CARGO_TARGET_DIR/debug/tomo-desktop}"
[ -x "$bin" ] || { echo "error: $bin missing: cargo build -p tomo-desktop first" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
cleanup() {
    # TOMO_DESKTOP_SHOTS=DIR keeps the screenshots for a look.
    [ -n "${TOMO_DESKTOP_SHOTS:-}" ] && cp "$work"/*.png "$TOMO_DESKTOP_SHOTS"/ 2>/dev/null
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- app log" >&2; cat "$work"/app*.log >&2 || true; exit 1; }

display=":$((90 + RANDOM % 100))"
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
export DISPLAY="$display"
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
xdpyinfo >/dev/null 2>&1 || fail "Xvfb did not start on $display"
openbox >/dev/null 2>&1 &
pids+=($!)
root_colour='#00ff00' # pure green: nothing in the UI or the Shizuku model uses it
xcompmgr >/dev/null 2>&1 &
pids+=($!)
# The "desktop" behind the pet: a window filled with that colour. (A root background would be more direct,
# but with openbox running xcompmgr paints the root black whatever xsetroot or ImageMagick set.)
convert -size 1280x800 "xc:$root_colour" "$work/backdrop.png"
display -geometry 1280x800+0+0 -title backdrop "$work/backdrop.png" &
pids+=($!)
for _ in $(seq 50); do xdotool search --onlyvisible --name '^backdrop' >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1
import -window root "$work/backdrop-check.png"
[ "$(convert "$work/backdrop-check.png" -format '%[hex:p{640,400}]' info:)" = "00FF00" ] ||
    fail "the backdrop is not $root_colour on screen; the transparency check would mean nothing"

export XDG_CONFIG_HOME="$work/config" TOMO_DATA_DIR="$work/data" TOMO_TEXT_ONLY=1
# The webview has no GPU here: software GL for WebGL, and no DMA-BUF renderer (not in Xvfb).
export LIBGL_ALWAYS_SOFTWARE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
export TOMO_LLM_BASE_URL="http://127.0.0.1:9/v1" TOMO_LLM_MODEL=unused

# Fraction (0..1) of pixels of the window's rectangle in a root screenshot that are exactly `colour`.
fraction_of() { # file x y w h colour
    convert "$1" -crop "${4}x${5}+${2}+${3}" +repage -fill black +opaque "$6" -fill white -opaque "$6" \
        -colorspace gray -format '%[fx:mean]' info:
}

start_app() { # log-name extra-args...
    local log="$work/$1.log"
    shift
    app_log="$log"
    "$bin" --profile profiles/hana.toml "$@" >"$log" 2>&1 &
    app_pid=$!
    wid=""
    for _ in $(seq 300); do
        wid="$(xdotool search --onlyvisible --name '^Tomo$' 2>/dev/null | head -1 || true)"
        [ -n "$wid" ] && break
        kill -0 "$app_pid" 2>/dev/null || fail "the app exited before its window appeared"
        sleep 0.1
    done
    [ -n "$wid" ] || fail "no window named Tomo appeared"
    eval "$(xdotool getwindowgeometry --shell "$wid")"
    win_x=$X win_y=$Y win_w=$WIDTH win_h=$HEIGHT
}

quit_app() { # expects exit 0 and a clean session shutdown
    xdotool windowactivate --sync "$wid" >/dev/null 2>&1 || true
    xdotool key alt+F4 # through XTEST, so openbox sees it (it sends WM_DELETE_WINDOW)
    local status=0
    for _ in $(seq 300); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$app_pid" 2>/dev/null && fail "the app did not quit within 30 s of Alt+F4"
    wait "$app_pid" || status=$?
    [ "$status" -eq 0 ] || fail "the app exited with status $status"
    grep -q "session shut down" "$app_log" || fail "no clean session shutdown in the log"
}

# Retries a screenshot check for up to 30 s (the model loads asynchronously after the window appears).
retry_shot() { for _ in $(seq 30); do sleep 1; "$1" && return 0; done; return 1; }

drawn() { # the stage (left part of the window; the transcript panel is on the right) is not all background
    import -window root "$work/normal.png"
    bg=$(fraction_of "$work/normal.png" "$win_x" "$((win_y + 60))" "$((win_w / 2))" "$((win_h - 120))" '#f4f1ec')
    awk -v f="$bg" 'BEGIN { exit !(f < 0.9) }'
}

see_through() { # the root colour shows through most of the window, but the character covers part of it
    eval "$(xdotool getwindowgeometry --shell "$wid")"
    import -window root "$work/pet.png"
    green=$(fraction_of "$work/pet.png" "$X" "$Y" "$WIDTH" "$HEIGHT" "$root_colour")
    awk -v f="$green" 'BEGIN { exit !(f > 0.3 && f < 0.97) }'
}

# --- 1. normal window: the character is drawn
start_app app-normal
retry_shot drawn || fail "the character was not drawn (background fraction $bg in the stage area)"
echo "ok: window appeared and the character is drawn (stage is $(awk -v f="$bg" 'BEGIN{printf "%.0f", (1-f)*100}')% non-background)"
quit_app
echo "ok: normal mode quit cleanly"

# --- 2. pet mode: transparent except the character
start_app app-pet --pet
retry_shot see_through || fail "pet mode is not transparent around a drawn character (root colour fraction $green)"
echo "ok: pet mode shows the desktop through the window ($(awk -v f="$green" 'BEGIN{printf "%.0f", f*100}')%) and the character over it"
quit_app
grep -q '"pet_mode": true' "$work"/config/*/desktop.json || fail "pet mode was not remembered"
grep -q '"pet_position"' "$work"/config/*/desktop.json || fail "the pet's position was not remembered"
echo "ok: pet mode quit cleanly and remembered its position"
