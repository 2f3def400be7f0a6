//! `tauri::generate_context!` embeds `../ui/dist` at compile time: say how to make it instead of failing
//! with a path error deep inside the macro. Also declares our commands, so each needs a permission.

use std::path::Path;

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
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
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
