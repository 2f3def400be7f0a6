#!/usr/bin/env bash
# Builds the Debian package of the desktop app with Tauri's own bundler (tauri-cli from crates.io, pinned):
# /usr/bin/tomo-desktop, /usr/bin/tomo (the CLI), the launcher entry Tomo.desktop with its icon, and the
# shipped profiles and plugin manifests in /usr/lib/Tomo (the web UI and the bundled Live2D model are inside
# the binary). Prints the .deb's path as its last line.
# Usage: scripts/build-package.sh [--debug]   (--debug: the debug build, as CI's tests use; no flag: release)
#
# Nothing is downloaded outside the registries: tauri-cli comes from crates.io (`cargo install`, once, into
# ~/.cache/tomo/cargo-tools, outside the clone so CI builds it once per machine), and the deb bundler writes
# the archive itself (AppImage, which downloads linuxdeploy, is not built: `targets` is ["deb"]).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
tomo_install_system_packages

# Pinned to the tauri crate's minor version (Cargo.lock: tauri 2.12.x): the CLI reads tauri.conf.json.
TAURI_CLI_VERSION=2.12.4
tools="${TOMO_CARGO_TOOLS:-$HOME/.cache/tomo/cargo-tools}"
cargo_tauri="$tools/bin/cargo-tauri"
if [ "$("$cargo_tauri" --version 2>/dev/null || true)" != "tauri-cli $TAURI_CLI_VERSION" ]; then
    echo "==> installing tauri-cli $TAURI_CLI_VERSION into $tools (once per machine; a cold build takes minutes)"
    cargo install tauri-cli --version "=$TAURI_CLI_VERSION" --locked --root "$tools"
fi

profile=release
tauri_flags=()
cargo_flags=(--release)
if [ "${1:-}" = --debug ]; then
    profile=debug
    tauri_flags=(--debug)
    cargo_flags=()
fi

tomo_build_ui
# The CLI goes into the package beside the app (deb "files"); its path is only known here.
cargo build --locked "${cargo_flags[@]}" -p tomo-cli
cli="$CARGO_TARGET_DIR/$profile/tomo"
extra_config="{\"bundle\":{\"linux\":{\"deb\":{\"files\":{\"/usr/bin/tomo\":\"$cli\"}}}}}"

# Build, strip (the bundler copies the binary as it is; symbols are half a release binary), then bundle.
cd src-tauri
"$cargo_tauri" build "${tauri_flags[@]}" --ci --no-bundle --config "$extra_config" -- --locked
if [ "$profile" = release ]; then
    strip --strip-unneeded "$CARGO_TARGET_DIR/release/tomo-desktop" "$cli"
fi
"$cargo_tauri" bundle "${tauri_flags[@]}" --ci --bundles deb --config "$extra_config"
deb="$(ls -t "$CARGO_TARGET_DIR/$profile/bundle/deb/"*.deb | head -1)"
# The bundler's staging copy (every installed file, unpacked) is hundreds of MB: only the .deb is kept.
rm -rf "${deb%.deb}"
echo "$deb"
