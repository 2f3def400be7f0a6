//! `tauri::generate_context!` embeds `../ui/dist` at compile time: say how to make it instead of failing
//! with a path error deep inside the macro. Also declares our commands, so each needs a permission.

use std::path::PathBuf;

/// Every command the webview may call; `capabilities/default.json` grants exactly these.
const COMMANDS: &[&str] = &[
    "send_op",
    "events_since",
    "list_profiles",
    "set_pet_mode",
    "pet_mode",
    "set_hit_region",
    "quit",
    "startup_status",
    "autostart_enabled",
    "set_autostart",
];

fn main() {
    // Read when the script runs, not baked in when it is compiled: cargo may reuse one compiled build
    // script for another checkout of the same workspace (its artifact names do not depend on the path).
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_default();
    let dist = manifest_dir.join("../ui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    if !dist.join("index.html").is_file() {
        eprintln!(
            "error: {} is missing: build the web UI first (cd ui && npm ci && npm run build)",
            dist.display()
        );
        std::process::exit(1);
    }
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        eprintln!("error: tauri build step failed: {error:#}");
        std::process::exit(1);
    }
}
