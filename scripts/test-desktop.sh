#!/usr/bin/env bash
# The desktop app for real under Xvfb + openbox + xcompmgr (a compositor: pet mode's transparency needs one).
# 1. Normal mode: the window appears and the Live2D character is drawn (screenshot pixels differ from the
#    page background where the character stands). Alt+F4 quits: exit status 0, session shut down.
# 2. Pet mode (--pet): a backdrop window of a colour the UI never uses lies under the pet; the screenshot shows
#    that colour through most of the window (transparent) but not all of it (the character). Quits with 0 again, and the
#    pet's position was saved to the app config dir. Beside the character the pointer reaches the window
#    below (click-through), over it the pet; dragging the character moves the window, and that place is saved.
# 3. The user's own models (--models-dir): a copy of Shizuku with magenta textures under the bundled model's
#    path replaces it; the screenshot shows magenta where the character stands.
# 4. The tray menu, clicked the way a panel does (scripts/tray-host.py is the StatusNotifier host on a private
#    session bus): its items are there; "Show / hide" hides and shows the window; "Pet mode" makes it
#    transparent and is checked; "Mute microphone" mutes the session (its mode_changed, in the debug log) and
#    is checked; Character > Kuro switches the session's character; "Quit" exits 0 after a clean shutdown.
# 5. A voice turn inside the app (not text mode): a spoken question played into the PulseAudio null sink
#    reaches the app through its monitor (the default microphone), is recognized by whisper and sent to the
#    scripted LLM (ui/e2e/llm-stub-cli.mjs), and the app speaks the answer: its log shows the sentences
#    played and drained, and a recording of the sink's monitor during the answer is not silent. Uses the installed voice models (the app installs them on its first run otherwise).
# Steps 1-4 run in text mode (no models or sound needed) and never call the LLM.
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
    [ -n "${TOMO_DESKTOP_SHOTS:-}" ] && { cp "$work"/*.png "$TOMO_DESKTOP_SHOTS"/ 2>/dev/null || true; }
    # The app too, if a failed step left it running.
    [ -n "${app_pid:-}" ] && { kill "$app_pid" 2>/dev/null || true; }
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
# Mapped is not yet painted: on a loaded machine (a CI run) the window took over a second to show its colour.
backdrop_shown=""
for _ in $(seq 20); do
    sleep 0.5
    import -window root "$work/backdrop-check.png"
    if [ "$(convert "$work/backdrop-check.png" -format '%[hex:p{640,400}]' info:)" = "00FF00" ]; then
        backdrop_shown=1
        break
    fi
done
[ -n "$backdrop_shown" ] || fail "the backdrop is not $root_colour on screen after 10 s; the transparency check would mean nothing"

# PulseAudio clients find the sound server's socket and cookie under the config dir, which moves now: step 5
# looks them up under the original one.
user_config_home="${XDG_CONFIG_HOME:-$HOME/.config}"
# Plain logs (no ANSI colours), so the checks below can grep them.
export NO_COLOR=1
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
    local status=0
    # Alt+F4 through XTEST, so openbox sees it (it sends WM_DELETE_WINDOW). Up to three presses: on a loaded
    # machine a press can reach the window before openbox has focused it.
    for _ in 1 2 3; do
        xdotool windowactivate --sync "$wid" >/dev/null 2>&1 || true
        xdotool key alt+F4
        for _ in $(seq 100); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$app_pid" 2>/dev/null || break
    done
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
    awk -v f="$green" 'BEGIN { exit !(f > 0.3 && f < 0.9) }'
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

# Click-through: outside the character the pointer is in the window below (the backdrop), over it in the pet.
# (X hands the pointer to the window whose input region holds it; the frame ids are what openbox made.)
pointer_window() { xdotool mousemove "$1" "$2"; sleep 0.5; xdotool getmouselocation --shell | sed -n 's/^WINDOW=//p'; }
colour_at() { convert "$work/pet.png" -format "%[hex:p{$1,$2}]" info:; }
eval "$(xdotool getwindowgeometry --shell "$wid")"
beside_x=$((X + WIDTH + 40)); [ "$beside_x" -lt 1240 ] || beside_x=$((X - 40))
backdrop_window="$(pointer_window "$beside_x" $((Y + HEIGHT / 2)))"
clear_x=$((X + WIDTH - 5)) clear_y=$((Y + HEIGHT / 2))
body_x=$((X + WIDTH / 2)) body_y=$((Y + HEIGHT / 2))
[ "$(colour_at "$clear_x" "$clear_y")" = 00FF00 ] || fail "($clear_x,$clear_y) should be a see-through spot of the pet"
[ "$(colour_at "$body_x" "$body_y")" != 00FF00 ] || fail "($body_x,$body_y) should be on the character"
[ "$(pointer_window "$clear_x" "$clear_y")" = "$backdrop_window" ] ||
    fail "beside the character the pointer does not reach the window below (no click-through)"
[ "$(pointer_window "$body_x" "$body_y")" != "$backdrop_window" ] ||
    fail "over the character the pointer passes through the pet (it could not be clicked or dragged)"
echo "ok: clicks pass through the pet beside the character and land on it over the character"

# Dragging the character moves the window (the window manager moves it), and the new place is remembered.
xdotool mousedown 1
sleep 0.3
for _ in 1 2 3; do xdotool mousemove_relative -- 40 20; sleep 0.2; done
xdotool mouseup 1
sleep 1
before_x=$X before_y=$Y
eval "$(xdotool getwindowgeometry --shell "$wid")"
[ $((X - before_x)) -eq 120 ] && [ $((Y - before_y)) -eq 60 ] ||
    fail "dragging the character by (120,60) moved the pet from ($before_x,$before_y) to ($X,$Y)"
echo "ok: dragging the character moved the pet by (120,60)"
quit_app
grep -q '"pet_mode": true' "$work"/config/*/desktop.json || fail "pet mode was not remembered"
tr -d ' \n' <"$work"/config/*/desktop.json | grep -q "\"pet_position\":\[$X,$Y\]" ||
    fail "the pet's position ($X,$Y) was not remembered: $(cat "$work"/config/*/desktop.json)"
echo "ok: pet mode quit cleanly and remembered where it was dragged"

# --- 3. the user's own models folder comes before the bundled models
models="$work/models"
mkdir -p "$models"
cp -r ui/dist/live2d/shizuku "$models/shizuku"
for texture in "$models"/shizuku/moc/shizuku.1024/*.png; do
    convert "$texture" -fill '#ff00ff' -colorize 100 "$texture" # same alpha, every colour magenta
done
magenta_drawn() {
    import -window root "$work/own-model.png"
    magenta=$(convert "$work/own-model.png" -crop "$((win_w / 2))x$((win_h - 120))+${win_x}+$((win_y + 60))" +repage \
        -fuzz 8% -fill black +opaque '#ff00ff' -fill white -opaque '#ff00ff' -colorspace gray -format '%[fx:mean]' info:)
    awk -v f="$magenta" 'BEGIN { exit !(f > 0.05) }'
}
# A fresh config dir: the app would otherwise come back in pet mode, as step 2 left it.
XDG_CONFIG_HOME="$work/config-own-model" start_app app-own-model --models-dir "$models"
retry_shot magenta_drawn || fail "the model from --models-dir was not drawn (magenta fraction $magenta)"
echo "ok: the user's model replaced the bundled one ($(awk -v f="$magenta" 'BEGIN{printf "%.0f", f*100}')% of the stage is its magenta)"
quit_app

# --- 4. the tray menu, clicked as a panel would
eval "$(dbus-launch --sh-syntax)" # a private session bus: the tray item and its host meet there
pids+=("$DBUS_SESSION_BUS_PID")
coproc TRAY { exec /usr/bin/python3 scripts/tray-host.py 2>"$work/tray-host.log"; }
pids+=("$TRAY_PID")
tray_reply=""
tray_read() { IFS= read -r -t "${1:-10}" tray_reply <&"${TRAY[0]}" || fail "the tray host said nothing (log: $(cat "$work/tray-host.log"))"; }
# A command and its reply (a repeated registration notice in between is not the reply).
tray() {
    echo "$*" >&"${TRAY[1]}"
    tray_read
    while [[ "$tray_reply" == '{"registered"'* ]]; do tray_read; done
}
# Waits up to 10 s for a line of the app's log (plain text: NO_COLOR).
await_log() { for _ in $(seq "${2:-100}"); do grep -q "$1" "$app_log" && return 0; sleep 0.1; done; return 1; }
# Asks python about the last reply: `tray_json 'EXPR'` exits non-zero unless EXPR (over `r`) is true.
tray_json() { /usr/bin/python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if ($1) else 1)" "$tray_reply"; }
# Sets `toggle` to the check state of a menu item, by label (0, 1, or None when it has none). Not inside
# $(...): the coprocess's pipes belong to this shell.
toggle=""
toggle_of() {
    tray toggle "$1"
    toggle="$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("toggle"))' "$tray_reply")"
}
tray_read
tray_json 'r.get("watcher") == "ready"' || fail "the tray host did not start: $tray_reply"
RUST_LOG=info,tomo_desktop=debug XDG_CONFIG_HOME="$work/config-tray" start_app app-tray
tray_read 30
tray_json '"registered" in r' || fail "the app's tray icon did not register: $tray_reply"
tray labels
labels="$(/usr/bin/python3 -c 'import json,sys; print("|".join(json.loads(sys.argv[1])["labels"]))' "$tray_reply")"
for want in "Show / hide" "Pet mode" "Mute microphone" "Character" "Hana" "Kuro" "Quit"; do
    [[ "|$labels|" == *"|$want|"* ]] || fail "the tray menu has no \"$want\" (it has: $labels)"
done
toggle_of 'Pet mode'
pet_toggle="$toggle"
toggle_of 'Mute microphone'
[ "$pet_toggle" = 0 ] && [ "$toggle" = 0 ] || fail "the tray's check marks do not start unchecked ($pet_toggle, $toggle)"
echo "ok: the tray icon registered with its menu ($labels)"
# The menu is there before the session: an op clicked before it is up is ignored (the log says so).
await_log "session ready character=" 300 || fail "the session did not start behind the tray"

visible() { xdotool search --onlyvisible --name '^Tomo$' >/dev/null 2>&1; }
tray click Show / hide
for _ in $(seq 50); do visible || break; sleep 0.1; done
visible && fail "the tray's Show / hide did not hide the window"
tray click Show / hide
for _ in $(seq 50); do visible && break; sleep 0.1; done
visible || fail "the tray's Show / hide did not bring the window back"
echo "ok: the tray's Show / hide hid the window and brought it back"

tray click Pet mode
tray_json '"clicked" in r' || fail "clicking Pet mode: $tray_reply"
retry_shot see_through || fail "Pet mode from the tray did not make the window transparent (root colour fraction $green)"
toggle_of 'Pet mode'
[ "$toggle" = 1 ] || fail "the tray's Pet mode is not checked after switching it on"
echo "ok: the tray's Pet mode made the window a pet and checked itself"

tray click Mute microphone
# GTK ticks a check item by itself when clicked: the session's own word is what counts.
await_log "mode changed mic_muted=true" || fail "the tray's Mute microphone did not reach the session"
toggle_of 'Mute microphone'
[ "$toggle" = 1 ] || fail "the tray's Mute microphone is not checked after the session muted"
echo "ok: the tray's Mute microphone muted the session (mode_changed) and shows checked"

tray click Kuro
await_log "session ready character=Kuro" || fail "the tray's Character > Kuro did not switch the session to Kuro"
echo "ok: the tray's Character > Kuro switched the session's character"

tray click Quit
for _ in $(seq 300); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$app_pid" 2>/dev/null && fail "the app did not quit within 30 s of the tray's Quit"
status=0
wait "$app_pid" || status=$?
[ "$status" -eq 0 ] || fail "the app exited with status $status after the tray's Quit"
grep -q "session shut down" "$app_log" || fail "no clean session shutdown after the tray's Quit"
echo "ok: the tray's Quit shut the session down and exited 0"
exec {TRAY[1]}>&- # the host ends when its input closes (bash runs one coprocess at a time)
wait "$TRAY_PID" 2>/dev/null || true

# --- 5. a voice turn in the app: microphone -> VAD -> whisper -> LLM -> Piper -> speakers
XDG_CONFIG_HOME="$user_config_home" scripts/pulse-null.sh >/dev/null
PULSE_SERVER="unix:$(XDG_CONFIG_HOME="$user_config_home" pactl info | sed -n 's/^Server String: //p')"
PULSE_COOKIE="$user_config_home/pulse/cookie"
export PULSE_SERVER PULSE_COOKIE
coproc LLM { exec node ui/e2e/llm-stub-cli.mjs 2>"$work/llm-stub.log"; }
pids+=("$LLM_PID")
IFS= read -r -t 10 llm_line <&"${LLM[0]}" || fail "the scripted LLM did not start: $(cat "$work/llm-stub.log")"
llm_url="${llm_line#base_url }"
flite -voice slt -t "What time is it?" -o "$work/question.wav"
RUST_LOG=info,tomo_desktop=debug TOMO_TEXT_ONLY=0 TOMO_LLM_BASE_URL="$llm_url" TOMO_LLM_MODEL=scripted-model XDG_CONFIG_HOME="$work/config-voice" \
    TOMO_DATA_DIR="$work/data-voice" start_app app-voice
# The microphone opens once the models are loaded (or installed, on a first run).
for _ in $(seq 6000); do grep -q "session: listening" "$app_log" && break; kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
grep -q "session: listening" "$app_log" || fail "the app never started listening to the microphone"
sleep 1
paplay --device=nullsink "$work/question.wav"
heard=""
while IFS= read -r -t 60 llm_line <&"${LLM[0]}"; do
    case "$llm_line" in user*) heard="${llm_line#user }"; break ;; esac
done
[ -n "$heard" ] || fail "no request reached the LLM within 60 s of speaking into the microphone"
/usr/bin/python3 -c '
import json, re, sys
sent = json.loads(sys.argv[1])
# The words of the user follow the [memory context] block (the time plugin puts the clock there).
sent = sent.rsplit("[/memory context]", 1)[-1]
words = re.sub(r"[^a-z ]", "", sent.lower()).split()
sys.exit(0 if words == "what time is it".split() else 1)' "$heard" ||
    fail "the LLM was sent $heard, not the spoken question"
echo "ok: a spoken question reached the LLM from the app's microphone: $heard"
# Record the speakers (the sink's monitor) while the app answers; nothing else plays into the sink now.
parecord --device=nullsink.monitor --file-format=wav "$work/answer.wav" &
recorder=$!
pids+=("$recorder")
for _ in $(seq 600); do grep -q "playback drained" "$app_log" && break; sleep 0.1; done
kill "$recorder" 2>/dev/null || true
wait "$recorder" 2>/dev/null || true
grep -q "audio started" "$app_log" || fail "the app played no sentence of its answer"
grep -q "playback drained" "$app_log" || fail "the app's answer did not finish playing within 60 s"
rms="$(sox "$work/answer.wav" -n stat 2>&1 | awk '/RMS +amplitude/ { print $3 }')" || rms=0
awk -v r="$rms" 'BEGIN { exit !(r > 0.01) }' || fail "the speakers stayed silent during the answer (RMS $rms)"
echo "ok: the app spoke its answer through the speakers ($(grep -c "audio started" "$app_log") sentences, RMS $rms)"
quit_app
echo "ok: voice mode quit cleanly"
