# Shared set-up for scripts/run, scripts/test and .ci/run. Idempotent: each step is skipped when done.
# shellcheck shell=bash

# Build output lives outside the clone so a fresh clone (CI) reuses an earlier build on the same machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tomo/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# CI builds once from a clean clone: incremental state only costs disk (gigabytes) and time there.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"; fi

# Debian packages the build needs. Installed only when missing (apt-get is slow even when it has nothing to do).
# cmake/clang: whisper.cpp (whisper-rs); libasound2-dev: cpal; libpulse-dev: the microphone read from the sound
# server; espeak-ng: Piper phonemes and a fallback voice; flite: fallback voice; pulseaudio + alsa plugins: a
# real (null) sound device for tests; sox: test audio;
# chromium: the web UI's end-to-end tests (driven by playwright-core, which downloads no browser);
# libxcb*/libxrandr/pipewire/wayland/egl/gbm: xcap (screen capture).
# The desktop app (src-tauri): WebKitGTK 4.1, GTK 3, libsoup 3, the tray (ayatana appindicator), librsvg,
# libxdo. A private X desktop for tests: Xvfb, openbox, xcompmgr (transparency needs a compositor),
# ImageMagick (windows showing text, screenshots), xdotool, x11-utils (xdpyinfo, xprop), x11-xserver-utils
# (xsetroot), fonts-wqy-zenhei (Chinese text for OCR), dbus-x11 (the tray's session bus under Xvfb), python3-gi
# (scripts/tray-host.py: a StatusNotifier tray host that clicks the tray menu in the desktop test), libgtk-3-bin
# (gtk-launch: the package test starts the app from its installed launcher entry).
# mecab + mecab-ipadic-utf8: word pronunciations for Kokoro's Japanese voices.
TOMO_APT_PACKAGES=(build-essential pkg-config curl ca-certificates python3 python3-venv cmake clang libclang-dev
    libasound2-dev libpulse-dev libasound2-plugins alsa-utils pulseaudio pulseaudio-utils espeak-ng flite sox chromium
    libxcb1-dev libxrandr-dev libxcb-randr0-dev libxcb-shm0-dev libpipewire-0.3-dev libwayland-dev libegl-dev
    libgbm-dev
    libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev librsvg2-dev
    libayatana-appindicator3-dev libxdo-dev
    xvfb xauth openbox xcompmgr imagemagick xdotool x11-utils x11-xserver-utils fonts-wqy-zenhei dbus-x11
    python3-gi libgtk-3-bin mecab mecab-ipadic-utf8)

tomo_install_system_packages() {
    local missing=()
    for package in "${TOMO_APT_PACKAGES[@]}"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "==> installing Debian packages: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        echo "error: cargo is not installed; install Rust with rustup (https://rustup.rs) first" >&2
        return 1
    fi
}

# The web UI: the pinned npm packages (lock file), type-check + build into ui/dist. The desktop app embeds
# ui/dist at compile time, so this runs before anything builds or lints src-tauri.
tomo_build_ui() {
    command -v npm >/dev/null || { echo "error: npm (Node.js 20+) is needed to build the web UI" >&2; return 1; }
    (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
}
