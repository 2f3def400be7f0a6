//! The HTTP side: routes, the auth layer, static UI files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tower_http::services::ServeDir;

use crate::static_guard::{self, StaticRoots};
use crate::{AppState, auth, profiles, ws};

/// `primary` (then `secondary` for what it lacks) through `ServeDir`, behind the static guard.
fn static_files(primary: &Path, secondary: Option<PathBuf>) -> Router {
    let service = match &secondary {
        Some(second) => {
            Router::new().fallback_service(ServeDir::new(primary).fallback(ServeDir::new(second)))
        }
        None => Router::new().fallback_service(ServeDir::new(primary)),
    };
    let roots: Vec<PathBuf> = std::iter::once(primary.to_path_buf())
        .chain(secondary)
        .collect();
    service.layer(middleware::from_fn_with_state(
        StaticRoots(Arc::new(roots)),
        static_guard::guard,
    ))
}

pub(crate) fn router(
    state: Arc<AppState>,
    ui_dir: Option<&Path>,
    models_dir: Option<&Path>,
) -> Router {
    let routes = Router::new()
        .route("/ws", get(ws::upgrade))
        .route("/health", get(health))
        .route("/api/profiles", get(list_profiles));
    // The user's models first, then the ones bundled with the UI (ServeDir refuses `..` in both; the
    // static guard refuses dotfiles and links out of either).
    let routes = match (models_dir, ui_dir) {
        (Some(models), Some(ui)) => {
            routes.nest_service("/live2d", static_files(models, Some(ui.join("live2d"))))
        }
        (Some(models), None) => routes.nest_service("/live2d", static_files(models, None)),
        (None, _) => routes,
    };
    let routes = match ui_dir {
        // ServeDir refuses `..` and serves `index.html` for directories.
        Some(dir) => routes.fallback_service(static_files(dir, None)),
        None => routes.fallback(no_ui),
    };
    // The guard wraps the fallback too: static files need the token like everything else. The
    // security headers wrap everything, refusals included.
    routes
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::guard,
        ))
        .layer(middleware::from_fn(static_guard::security_headers))
        .with_state(state)
}

fn json_response(value: &serde_json::Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        value.to_string(),
    )
        .into_response()
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    json_response(&json!({
        "status": "ok",
        "latest_seq": state.hub.latest_seq(),
        "clients": state.hub.client_count(),
    }))
}

async fn list_profiles(State(state): State<Arc<AppState>>) -> Response {
    let Some(dir) = state.profiles_dir.clone() else {
        return json_response(&json!([]));
    };
    // Loading profiles reads and parses files: keep it off the async workers.
    match tokio::task::spawn_blocking(move || profiles::list(&dir)).await {
        Ok(list) => json_response(&json!(list)),
        Err(error) => {
            tracing::error!(%error, "listing profiles failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot list profiles\n").into_response()
        }
    }
}

async fn no_ui() -> Response {
    (
        StatusCode::NOT_FOUND,
        "No UI directory: build the UI (ui/dist) or pass --ui-dir. The session socket is at /ws.\n",
    )
        .into_response()
}
