#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `ui/src/bindings.ts` is generated from the Rust commands and types; this fails when the committed file
//! no longer matches them. `TOMO_BLESS=1 cargo test -p tomo-desktop --test bindings` rewrites it.

#[test]
fn committed_typescript_bindings_are_up_to_date() {
    let committed = tomo_desktop::bindings::committed_path();
    if std::env::var_os("TOMO_BLESS").is_some() {
        tomo_desktop::bindings::export(&committed).unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("bindings.ts");
    tomo_desktop::bindings::export(&fresh).unwrap();
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    let old = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        old == fresh,
        "{} is stale: regenerate it with `TOMO_BLESS=1 cargo test -p tomo-desktop --test bindings` and commit it",
        committed.display()
    );
}
