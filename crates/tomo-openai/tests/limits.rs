//! What a hostile or broken server can make the client hold and show: a real socket serves each case.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tomo_llm::{ChatMessage, ChatModel, LlmEndpoint, LlmError};
use tomo_openai::{BodyLimits, OpenAiClient};

const KEY: &str = "sk-test-0123456789abcdef";

/// Serves every connection with `answer`, after reading the request head (and what arrived with it).
async fn serve(
    answer: impl Fn(TcpStream) -> futures::future::BoxFuture<'static, ()> + Send + Sync + 'static,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buf = [0_u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            tokio::spawn(answer(socket));
        }
    });
    format!("http://{addr}/v1")
}

fn endpoint(base_url: String) -> LlmEndpoint {
    LlmEndpoint {
        base_url,
        model: "m".into(),
        api_key: Some(KEY.into()),
        temperature: None,
        max_tokens: None,
        idle_timeout: Duration::from_secs(10),
    }
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// The error a stream ends with (the first one), after draining what came before it.
async fn stream_error(client: &OpenAiClient) -> LlmError {
    let messages = [ChatMessage::user("hi")];
    let mut stream = match client.stream_chat(&messages, &[]).await {
        Ok(stream) => stream,
        Err(error) => return error,
    };
    while let Some(item) = stream.next().await {
        if let Err(error) = item {
            return error;
        }
    }
    panic!("the stream ended without an error");
}

/// A server that sends one line forever: cut off at the event cap with a reason, instead of being
/// buffered without end.
#[tokio::test]
async fn a_line_that_never_ends_is_cut_off() {
    let url = serve(|mut socket| {
        Box::pin(async move {
            socket.write_all(SSE_HEAD).await.ok();
            socket
                .write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"")
                .await
                .ok();
            let filler = vec![b'a'; 64 * 1024];
            // Bounded: 64 MiB at most, far past the cap, so a client without one would not stop early.
            for _ in 0..1024 {
                if socket.write_all(&filler).await.is_err() {
                    return;
                }
            }
        })
    })
    .await;
    let limits = BodyLimits {
        max_event_bytes: 256 * 1024,
        max_body_bytes: 32 * 1024 * 1024,
    };
    let client = OpenAiClient::with_limits(endpoint(url), limits).unwrap();
    let error = stream_error(&client).await;
    assert!(matches!(error, LlmError::Stream(_)), "{error:?}");
    assert!(error.to_string().contains("262144 bytes"), "{error}");
}

/// Endless small chunks: the whole body has a cap too.
#[tokio::test]
async fn an_answer_that_never_ends_is_cut_off() {
    let url = serve(|mut socket| {
        Box::pin(async move {
            socket.write_all(SSE_HEAD).await.ok();
            let chunk = b"data: {\"choices\":[{\"delta\":{\"content\":\"la \"}}]}\n\n";
            for _ in 0..1_000_000 {
                if socket.write_all(chunk).await.is_err() {
                    return;
                }
            }
        })
    })
    .await;
    let limits = BodyLimits {
        max_event_bytes: 1024,
        max_body_bytes: 512 * 1024,
    };
    let client = OpenAiClient::with_limits(endpoint(url), limits).unwrap();
    let error = stream_error(&client).await;
    assert!(error.to_string().contains("524288 bytes"), "{error}");
}

/// A server that echoes the key it was sent, in an error body and in a streamed error: the key is
/// replaced before the error reaches anyone.
#[tokio::test]
async fn an_echoed_key_never_reaches_the_error() {
    for status in ["401 Unauthorized", "500 Internal Server Error"] {
        let url = serve(move |mut socket| {
            Box::pin(async move {
                let body = format!(
                    "{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\",\"type\":\"invalid_request_error\"}}}}"
                );
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(answer.as_bytes()).await.ok();
            })
        })
        .await;
        let client = OpenAiClient::new(endpoint(url)).unwrap();
        let error = stream_error(&client).await;
        let text = error.to_string();
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
    let url = serve(|mut socket| {
        Box::pin(async move {
            socket.write_all(SSE_HEAD).await.ok();
            let chunk = format!("data: {{\"error\":{{\"message\":\"bad key {KEY}\"}}}}\n\n");
            socket.write_all(chunk.as_bytes()).await.ok();
        })
    })
    .await;
    let client = OpenAiClient::new(endpoint(url)).unwrap();
    let text = stream_error(&client).await.to_string();
    assert!(!text.contains(KEY), "{text}");
}
