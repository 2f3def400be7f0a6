//! Byte-level checks of what the server writes, over a plain `TcpStream`, so HTTP framing is
//! asserted exactly rather than through a client that may paper over mistakes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tomo_testkit::{ScriptedResponse, ScriptedServer, StreamStep, chunk};

const BODY: &str = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// Sends one raw request and reads everything until the server closes the connection.
async fn exchange(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("server should close the connection")
        .unwrap();
    out
}

fn chat_request(body: &str) -> Vec<u8> {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer sk-test\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Splits a response into its head and the decoded HTTP chunks, and says whether the terminal
/// zero-length chunk was present.
fn split_chunked(raw: &[u8]) -> (String, Vec<String>, bool) {
    let text = String::from_utf8(raw.to_vec()).unwrap();
    let (head, mut rest) = text.split_once("\r\n\r\n").unwrap();
    let mut chunks = Vec::new();
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return (head.to_owned(), chunks, false);
        };
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            assert_eq!(after, "\r\n", "nothing may follow the terminal chunk");
            return (head.to_owned(), chunks, true);
        }
        chunks.push(after[..size].to_owned());
        assert_eq!(&after[size..size + 2], "\r\n");
        rest = &after[size + 2..];
    }
}

#[tokio::test]
async fn stream_is_chunked_sse_with_one_event_per_chunk() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        StreamStep::Chunk(chunk::role()),
        StreamStep::Chunk(chunk::text("Hi")),
        StreamStep::Raw(": keepalive\n\n".into()),
        StreamStep::Raw(String::new()),
        StreamStep::Chunk(chunk::finish("stop")),
        StreamStep::Done,
    ])])
    .await
    .unwrap();
    let raw = exchange(server.addr(), &chat_request(BODY)).await;
    let (head, chunks, terminated) = split_chunked(&raw);

    let mut lines = head.split("\r\n");
    assert_eq!(lines.next(), Some("HTTP/1.1 200 OK"));
    let headers: Vec<&str> = lines.collect();
    for expected in [
        "Content-Type: text/event-stream",
        "Cache-Control: no-cache",
        "Transfer-Encoding: chunked",
        "Connection: close",
    ] {
        assert!(
            headers.contains(&expected),
            "missing {expected:?} in {headers:?}"
        );
    }
    assert!(terminated, "a complete stream ends with 0\\r\\n\\r\\n");
    assert_eq!(
        chunks,
        [
            format!("data: {}\n\n", chunk::role()),
            format!("data: {}\n\n", chunk::text("Hi")),
            ": keepalive\n\n".to_owned(),
            format!("data: {}\n\n", chunk::finish("stop")),
            "data: [DONE]\n\n".to_owned(),
        ]
    );

    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].method, "POST");
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].header("Authorization"), Some("Bearer sk-test"));
    assert!(recorded[0].headers.iter().any(|(n, _)| n == "content-type"));
    assert_eq!(
        recorded[0].messages(),
        [json!({"role":"user","content":"hi"})]
    );
}

#[tokio::test]
async fn disconnect_omits_the_terminal_chunk() {
    let server = ScriptedServer::start(vec![tomo_testkit::script::text_then_disconnect(
        "Half an answer",
    )])
    .await
    .unwrap();
    let raw = exchange(server.addr(), &chat_request(BODY)).await;
    let (_, chunks, terminated) = split_chunked(&raw);
    assert!(!terminated);
    assert!(!chunks.is_empty());
    assert!(!chunks.iter().any(|c| c.contains("[DONE]")));
}

#[tokio::test]
async fn close_sends_nothing() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Close])
        .await
        .unwrap();
    let raw = exchange(server.addr(), &chat_request(BODY)).await;
    assert!(raw.is_empty());
    assert_eq!(server.requests().len(), 1, "the request is still recorded");
}

#[tokio::test]
async fn status_has_content_length_and_openai_error() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Status {
        code: 401,
        message: "bad key".into(),
    }])
    .await
    .unwrap();
    let raw = String::from_utf8(exchange(server.addr(), &chat_request(BODY)).await).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 401 Unauthorized\r\n"));
    assert!(head.contains(&format!("Content-Length: {}", body.len())));
    assert!(head.contains("Content-Type: application/json"));
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["error"]["message"], "bad key");
    assert_eq!(body["error"]["code"], "invalid_api_key");
}

#[tokio::test]
async fn chunked_request_bodies_are_decoded() {
    let server = ScriptedServer::start(vec![tomo_testkit::script::text_reply("ok")])
        .await
        .unwrap();
    let (a, b) = BODY.split_at(10);
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let raw = exchange(server.addr(), request.as_bytes()).await;
    assert!(raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(server.requests()[0].messages().len(), 1);
}

#[tokio::test]
async fn malformed_and_non_json_requests_get_400_without_using_the_script() {
    let server = ScriptedServer::start(vec![tomo_testkit::script::text_reply("ok")])
        .await
        .unwrap();
    let raw = exchange(server.addr(), b"NONSENSE\r\n\r\n").await;
    assert!(raw.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
    assert!(server.requests().is_empty());

    let raw = exchange(server.addr(), &chat_request("{not json")).await;
    assert!(raw.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
    assert_eq!(server.requests()[0].body, json!("{not json"));
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn a_probe_that_sends_nothing_is_ignored() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    drop(TcpStream::connect(server.addr()).await.unwrap());
    let raw = exchange(server.addr(), b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
}
