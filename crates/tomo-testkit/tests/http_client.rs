//! The server as a real HTTP client (reqwest/hyper, the stack async-openai uses) sees it:
//! SSE parsing, error statuses, disconnects, hangs, concurrency and request recording.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tomo_testkit::{NO_RESPONSE_LEFT, ScriptedResponse, ScriptedServer, StreamStep, chunk, script};

fn chat_body(user: &str) -> String {
    json!({
        "model": "scripted-model",
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": [
            { "role": "system", "content": "You are Tomo." },
            { "role": "user", "content": user },
        ],
    })
    .to_string()
}

async fn post_chat(server: &ScriptedServer, user: &str) -> reqwest::Result<reqwest::Response> {
    reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url()))
        .header("authorization", "Bearer sk-scripted")
        .header("content-type", "application/json")
        .body(chat_body(user))
        .send()
        .await
}

/// Reads the body chunk by chunk (as a streaming client does), surfacing body errors.
async fn read_body(mut response: reqwest::Response) -> reqwest::Result<String> {
    let mut body = Vec::new();
    while let Some(bytes) = response.chunk().await? {
        body.extend_from_slice(&bytes);
    }
    Ok(String::from_utf8(body).unwrap())
}

/// `data:` payloads of the SSE events in `body`, in order.
fn sse_data(body: &str) -> Vec<String> {
    assert!(
        body.ends_with("\n\n") || body.is_empty(),
        "events end with a blank line"
    );
    body.split("\n\n")
        .filter(|event| !event.is_empty())
        .filter_map(|event| event.strip_prefix("data: ").map(str::to_owned))
        .collect()
}

fn content_of(data: &[String]) -> String {
    data.iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn text_reply_streams_and_records_the_request() {
    let server = ScriptedServer::start(vec![script::text_reply("Hello, I am Tomo!")])
        .await
        .unwrap();
    let response = post_chat(&server, "who are you?").await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let data = sse_data(&read_body(response).await.unwrap());

    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(content_of(&data), "Hello, I am Tomo!");
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], script::PROMPT_TOKENS);

    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(
        recorded[0].header("authorization"),
        Some("Bearer sk-scripted")
    );
    assert_eq!(recorded[0].body["stream_options"]["include_usage"], true);
    assert_eq!(recorded[0].messages().len(), 2);
    assert_eq!(recorded[0].messages()[1]["content"], "who are you?");
}

#[tokio::test]
async fn raw_steps_pass_through_unchanged() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        StreamStep::Raw("data: {not json\n\n".into()),
        StreamStep::Chunk(chunk::reasoning("hmm")),
        StreamStep::Done,
    ])])
    .await
    .unwrap();
    let body = read_body(post_chat(&server, "x").await.unwrap())
        .await
        .unwrap();
    let data = sse_data(&body);
    assert_eq!(data[0], "{not json");
    assert_eq!(data[1], chunk::reasoning("hmm").to_string());
    assert_eq!(data[2], "[DONE]");
}

#[tokio::test]
async fn disconnect_is_a_body_error_not_a_clean_end() {
    let server = ScriptedServer::start(vec![script::text_then_disconnect("partial reply")])
        .await
        .unwrap();
    let mut response = post_chat(&server, "x").await.unwrap();
    assert_eq!(response.status(), 200);
    let mut received = Vec::new();
    let error = loop {
        match response.chunk().await {
            Ok(Some(bytes)) => received.extend_from_slice(&bytes),
            Ok(None) => panic!("stream ended cleanly after a Disconnect"),
            Err(error) => break error,
        }
    };
    assert!(error.is_body() || error.is_decode(), "{error:?}");
    // The deltas before the cut were delivered.
    let data = sse_data(std::str::from_utf8(&received).unwrap());
    assert_eq!(content_of(&data), "partial reply");
}

#[tokio::test]
async fn status_response_has_code_and_openai_error_body() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Status {
        code: 429,
        message: "Rate limit reached".into(),
    }])
    .await
    .unwrap();
    let response = post_chat(&server, "x").await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({ "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "param": null,
            "code": "rate_limit_exceeded",
        } })
    );
}

#[tokio::test]
async fn exhausted_queue_answers_500_until_more_is_pushed() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let response = post_chat(&server, "x").await.unwrap();
    assert_eq!(response.status(), 500);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["message"], NO_RESPONSE_LEFT);

    server.push(script::text_reply("late"));
    let response = post_chat(&server, "again").await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        content_of(&sse_data(&read_body(response).await.unwrap())),
        "late"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the unanswered request is recorded too"
    );
}

#[tokio::test]
async fn hang_never_answers_and_close_gives_a_request_error() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Hang, ScriptedResponse::Close])
        .await
        .unwrap();
    let hung = tokio::time::timeout(Duration::from_millis(300), post_chat(&server, "x")).await;
    assert!(hung.is_err(), "a Hang must not answer");

    let error = post_chat(&server, "y").await.unwrap_err();
    assert!(!error.is_status(), "{error:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn dropping_the_server_releases_hanging_clients() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Hang])
        .await
        .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let client = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .body(chat_body("x"))
            .send()
            .await
    });
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    drop(server);
    let result = tokio::time::timeout(Duration::from_secs(5), client)
        .await
        .expect("client should be released when the server is dropped")
        .unwrap();
    assert!(result.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_clients_concurrently_in_queue_order() {
    let slow = ScriptedResponse::Stream(vec![
        StreamStep::Chunk(chunk::role()),
        StreamStep::Delay(Duration::from_millis(1000)),
        StreamStep::Chunk(chunk::text("slow")),
        StreamStep::Done,
    ]);
    let server = ScriptedServer::start(vec![slow, script::text_reply("fast")])
        .await
        .unwrap();
    // The first client is answered slowly; the second must not wait for it.
    let slow_response = post_chat(&server, "first").await.unwrap();
    let started = Instant::now();
    let fast = read_body(post_chat(&server, "second").await.unwrap())
        .await
        .unwrap();
    let fast_elapsed = started.elapsed();
    let slow = read_body(slow_response).await.unwrap();

    assert_eq!(content_of(&sse_data(&fast)), "fast");
    assert_eq!(content_of(&sse_data(&slow)), "slow");
    assert!(
        fast_elapsed < Duration::from_millis(1000),
        "{fast_elapsed:?}"
    );
    let order: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.messages()[1]["content"].clone())
        .collect();
    assert_eq!(order, ["first", "second"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_simultaneous_streams_both_complete() {
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(
            "one two three",
            Duration::from_millis(20),
            Duration::from_millis(5),
        ),
        script::text_reply_with_delay(
            "one two three",
            Duration::from_millis(20),
            Duration::from_millis(5),
        ),
    ])
    .await
    .unwrap();
    let (a, b) = tokio::join!(
        async {
            read_body(post_chat(&server, "a").await.unwrap())
                .await
                .unwrap()
        },
        async {
            read_body(post_chat(&server, "b").await.unwrap())
                .await
                .unwrap()
        },
    );
    for body in [a, b] {
        let data = sse_data(&body);
        assert_eq!(content_of(&data), "one two three");
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    }
    assert_eq!(server.remaining(), 0);
}

#[tokio::test]
async fn wait_for_requests_waits_and_times_out() {
    let server = ScriptedServer::start(vec![script::text_reply("ok")])
        .await
        .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let response = reqwest::Client::new()
            .post(url)
            .body(chat_body("later"))
            .send()
            .await
            .unwrap();
        let _ = response.text().await;
    });
    let requests = server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(requests[0].messages()[1]["content"], "later");

    let error = server
        .wait_for_requests(2, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        tomo_testkit::TestkitError::Timeout {
            expected: 2,
            received: 1,
            ..
        }
    ));
}

#[tokio::test]
async fn models_list_and_unknown_paths() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let client = reqwest::Client::new();
    let models: Value = serde_json::from_str(
        &client
            .get(format!("{}/models", server.base_url()))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], chunk::MODEL);

    let response = client
        .post(format!("{}/embeddings", server.base_url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/embeddings")
    );
    assert!(
        server.requests().is_empty(),
        "only chat requests are recorded"
    );
}
