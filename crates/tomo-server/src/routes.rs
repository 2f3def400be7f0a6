//! The HTTP side: routes, the auth layer, static UI files.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tower_http::services::ServeDir;

use crate::{AppState, auth, profiles, ws};

pub(crate) fn router(
    state: Arc<AppState>,
    ui_dir: Option<&Path>,
    models_dir: Option<&Path>,
) -> Router {
    let routes = Router::new()
        .route("/ws", get(ws::upgrade))
        .route("/health", get(health))
        .route("/api/profiles", get(list_profiles));
    // The user's models first, then the ones bundled with the UI (ServeDir refuses `..` in both).
    let routes = match (models_dir, ui_dir) {
        (Some(models), Some(ui)) => routes.nest_service(
            "/live2d",
            ServeDir::new(models).fallback(ServeDir::new(ui.join("live2d"))),
        ),
        (Some(models), None) => routes.nest_service("/live2d", ServeDir::new(models)),
        (None, _) => routes,
    };
    let routes = match ui_dir {
        // ServeDir refuses `..` and serves `index.html` for directories.
        Some(dir) => routes.fallback_service(ServeDir::new(dir)),
        None => routes.fallback(no_ui),
    };
    // The guard wraps the fallback too: static files need the token like everything else.
    routes
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::guard,
        ))
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
