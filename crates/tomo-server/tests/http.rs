//! The HTTP side and the security rules: binds, tokens, Host and Origin checks, profiles, static files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;

use serde_json::Value;
use support::{Fixture, next};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tomo_server::{Server, ServerConfig, ServerError};

const TOKEN: &str = "correct-horse-battery-staple";

async fn start_bare(config: ServerConfig) -> Result<Server, ServerError> {
    let (ops, _ops_rx) = mpsc::channel(4);
    let (_events_tx, events) = mpsc::unbounded_channel();
    Server::start(config, ops, events).await
}

/// Raw HTTP/1.1, so the test controls the `Host` header byte for byte. Returns the status code.
async fn raw_get(addr: SocketAddr, path: &str, host: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

#[tokio::test]
async fn a_non_loopback_bind_needs_allow_remote_and_a_token() {
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let refused = start_bare(ServerConfig {
        addr: any,
        ..ServerConfig::default()
    })
    .await;
    assert!(
        matches!(refused, Err(ServerError::RemoteNotAllowed { .. })),
        "{refused:?}"
    );

    let refused = start_bare(ServerConfig {
        addr: any,
        allow_remote: true,
        ..ServerConfig::default()
    })
    .await;
    let error = refused.unwrap_err();
    assert!(matches!(error, ServerError::RemoteNeedsToken { .. }));
    assert!(error.to_string().contains("TOMO_SERVER_TOKEN"), "{error}");

    let short = start_bare(ServerConfig {
        addr: any,
        allow_remote: true,
        token: Some("short".into()),
        ..ServerConfig::default()
    })
    .await;
    assert!(
        matches!(short, Err(ServerError::TokenTooShort)),
        "{short:?}"
    );

    let server = start_bare(ServerConfig {
        addr: any,
        allow_remote: true,
        token: Some(TOKEN.into()),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    assert!(server.local_addr().ip().is_unspecified());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn with_a_token_every_request_must_carry_it() {
    let fx = Fixture::start(Vec::new(), |c| c.token = Some(TOKEN.into())).await;
    let base = format!("http://{}", fx.addr());
    let http = reqwest::Client::new();

    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(http.get(format!("{base}/health")).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(
            http.get(format!("{base}/health"))
                .bearer_auth("wrong-token-wrong-token")
                .send()
                .await
                .unwrap()
        ),
        401
    );
    assert_eq!(
        status(
            http.get(format!("{base}/api/profiles"))
                .send()
                .await
                .unwrap()
        ),
        401
    );
    assert_eq!(
        status(http.get(format!("{base}/index.html")).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(
            http.get(format!("{base}/health"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
        ),
        200
    );
    assert_eq!(
        status(
            http.get(format!("{base}/health?token={TOKEN}"))
                .send()
                .await
                .unwrap()
        ),
        200
    );

    // The socket too.
    let refused = tokio_tungstenite::connect_async(format!("ws://{}/ws", fx.addr())).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401);
        }
        other => panic!("expected 401, got {other:?}"),
    }
    let mut ws = fx.connect(&format!("token={TOKEN}")).await;
    assert_eq!(next(&mut ws).await["type"], "session_ready");
    let mut request = format!("ws://{}/ws", fx.addr())
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap(),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(next(&mut ws).await["type"], "session_ready");
}

#[tokio::test]
async fn loopback_refuses_foreign_hosts_and_origins() {
    let fx = Fixture::start(Vec::new(), |_| {}).await;
    let port = fx.addr().port();
    assert_eq!(
        raw_get(fx.addr(), "/health", &format!("127.0.0.1:{port}")).await,
        200
    );
    assert_eq!(
        raw_get(fx.addr(), "/health", &format!("localhost:{port}")).await,
        200
    );
    // DNS rebinding: a foreign name that resolves to 127.0.0.1.
    assert_eq!(
        raw_get(fx.addr(), "/health", &format!("evil.example:{port}")).await,
        403
    );

    let url = format!("ws://{}/ws", fx.addr());
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("origin", HeaderValue::from_static("https://evil.example"));
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403);
        }
        other => panic!("expected 403, got {other:?}"),
    }
    // Another local page is another origin (issue 13: any local web page could drive the session).
    let dev = || {
        let mut request = url.as_str().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("origin", HeaderValue::from_static("http://localhost:5173"));
        request
    };
    match tokio_tungstenite::connect_async(dev()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403);
        }
        other => panic!("expected 403, got {other:?}"),
    }
    // The server's own origin, and an origin the user allowed (UI development), get in.
    let mut request = url.as_str().into_client_request().unwrap();
    let own = HeaderValue::from_str(&format!("http://{}", fx.addr())).unwrap();
    request.headers_mut().insert("origin", own);
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(next(&mut ws).await["type"], "session_ready");
    let dev_fx = Fixture::start(Vec::new(), |c| {
        c.allowed_origins = vec!["http://localhost:5173".into()]
    })
    .await;
    let mut request = format!("ws://{}/ws", dev_fx.addr())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", HeaderValue::from_static("http://localhost:5173"));
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(next(&mut ws).await["type"], "session_ready");
}

#[tokio::test]
async fn profiles_health_and_static_files() {
    let ui = tempfile::tempdir().unwrap();
    let ui_dir = ui.path().join("dist");
    std::fs::create_dir(&ui_dir).unwrap();
    std::fs::write(ui_dir.join("index.html"), "<h1>Tomo</h1>").unwrap();
    // Beside the UI directory, so `..` would reach it.
    std::fs::write(ui.path().join("secret.txt"), "secret").unwrap();
    let fx = Fixture::start(Vec::new(), move |c| c.ui_dir = Some(ui_dir)).await;
    // Broken profiles and other files are not offered.
    std::fs::write(fx.profiles.join("broken.toml"), "[character\n").unwrap();
    std::fs::write(fx.profiles.join("profile.schema.json"), "{}").unwrap();
    let base = format!("http://{}", fx.addr());

    let profiles: Value = serde_json::from_str(
        &reqwest::get(format!("{base}/api/profiles"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        profiles,
        serde_json::json!([
            {"file": "hana.toml", "name": "Hana", "agent_id": "hana",
             "live2d_model": "assets/live2d/hana/hana.model.json", "emotion_map": {"joy": "f01"}},
            {"file": "kuro.toml", "name": "Kuro", "agent_id": "kuro",
             "live2d_model": "assets/live2d/kuro/kuro.model.json", "emotion_map": {"joy": "f01"}},
        ])
    );

    let health: Value = serde_json::from_str(
        &reqwest::get(format!("{base}/health"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(
        health["latest_seq"], 1,
        "session_ready went through the hub"
    );

    let index = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(index.status().as_u16(), 200);
    assert!(
        index.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(index.text().await.unwrap(), "<h1>Tomo</h1>");
    assert_eq!(
        reqwest::get(format!("{base}/missing.js"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    // No way out of the UI directory.
    let host = format!("localhost:{}", fx.addr().port());
    assert_eq!(raw_get(fx.addr(), "/secret.txt", &host).await, 404);
    for escape in ["/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt"] {
        let status = raw_get(fx.addr(), escape, &host).await;
        assert!((400..500).contains(&status), "{escape}: {status}");
    }
}

#[tokio::test]
async fn the_users_own_models_come_first_then_the_bundled_ones() {
    let root = tempfile::tempdir().unwrap();
    let ui_dir = root.path().join("dist");
    let models = root.path().join("assets/live2d");
    std::fs::create_dir_all(ui_dir.join("live2d/shizuku")).unwrap();
    std::fs::create_dir_all(models.join("mine")).unwrap();
    std::fs::create_dir_all(models.join("shizuku")).unwrap();
    std::fs::write(ui_dir.join("live2d/shizuku/shizuku.model.json"), "bundled").unwrap();
    std::fs::write(ui_dir.join("live2d/shizuku/ui-only.json"), "bundled only").unwrap();
    std::fs::write(models.join("mine/mine.model3.json"), "{\"Version\":3}").unwrap();
    // The user's copy of a bundled model wins.
    std::fs::write(models.join("shizuku/shizuku.model.json"), "the user's").unwrap();
    // Beside the models folder, so `..` would reach it.
    std::fs::write(root.path().join("assets/secret.txt"), "secret").unwrap();
    let fx = Fixture::start(Vec::new(), move |c| {
        c.ui_dir = Some(ui_dir);
        c.models_dir = Some(models);
    })
    .await;
    let base = format!("http://{}", fx.addr());
    let get = |path: &'static str| {
        let url = format!("{base}{path}");
        async move {
            let response = reqwest::get(url).await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    assert_eq!(
        get("/live2d/mine/mine.model3.json").await,
        (200, "{\"Version\":3}".to_string())
    );
    assert_eq!(
        get("/live2d/shizuku/shizuku.model.json").await,
        (200, "the user's".to_string())
    );
    assert_eq!(
        get("/live2d/shizuku/ui-only.json").await,
        (200, "bundled only".to_string())
    );
    assert_eq!(get("/live2d/nope/nope.model3.json").await.0, 404);
    let host = format!("localhost:{}", fx.addr().port());
    for escape in ["/live2d/../secret.txt", "/live2d/%2e%2e/secret.txt"] {
        let status = raw_get(fx.addr(), escape, &host).await;
        assert!((400..500).contains(&status), "{escape}: {status}");
    }
}
