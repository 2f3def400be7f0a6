//! End-to-end through async-openai, the client Tomo's agent loop uses: scripted streams must
//! deserialize into its stock chunk types, and failures must surface as the errors it reports
//! against a real server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{CreateChatCompletionStreamResponse, FinishReason};
use futures::StreamExt;
use serde_json::{Value, json};
use tomo_testkit::{ScriptedResponse, ScriptedServer, script};

type Chunk = CreateChatCompletionStreamResponse;

fn client(server: &ScriptedServer) -> Client<OpenAIConfig> {
    Client::with_config(
        OpenAIConfig::new()
            .with_api_base(server.base_url())
            .with_api_key("sk-scripted"),
    )
}

fn request() -> Value {
    json!({
        "model": "scripted-model",
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": [{ "role": "user", "content": "hi" }],
    })
}

/// Drains the stream; the first error (if any) ends it, as an agent loop would stop there.
async fn collect(
    server: &ScriptedServer,
) -> Result<(Vec<Chunk>, Option<OpenAIError>), OpenAIError> {
    let mut stream = client(server)
        .chat()
        .create_stream_byot::<Value, Chunk>(request())
        .await?;
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => return Ok((chunks, Some(error))),
        }
    }
    Ok((chunks, None))
}

fn content(chunks: &[Chunk]) -> String {
    chunks
        .iter()
        .flat_map(|c| &c.choices)
        .filter_map(|choice| choice.delta.content.as_deref())
        .collect()
}

#[tokio::test]
async fn text_reply_parses_into_stock_types() {
    let server = ScriptedServer::start(vec![script::text_reply("Hello from Tomo.")])
        .await
        .unwrap();
    let (chunks, error) = collect(&server).await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(content(&chunks), "Hello from Tomo.");
    let finish = chunks
        .iter()
        .flat_map(|c| &c.choices)
        .find_map(|choice| choice.finish_reason);
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = chunks.last().and_then(|c| c.usage.as_ref()).unwrap();
    // "Hello", " from", " Tomo", "."
    assert_eq!(usage.completion_tokens, 4);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-scripted")
    );
}

#[tokio::test]
async fn interleaved_tool_call_fragments_accumulate_by_index() {
    let calls = [
        (
            "call_0",
            "web_search",
            r#"{"query":"weather in Kyoto","limit":3}"#,
        ),
        ("call_1", "get_time", r#"{"tz":"Asia/Tokyo"}"#),
    ];
    let server = ScriptedServer::start(vec![script::tool_calls(&calls, 4)])
        .await
        .unwrap();
    let (chunks, error) = collect(&server).await.unwrap();
    assert!(error.is_none(), "{error:?}");

    let mut acc: BTreeMap<u32, (String, String, String)> = BTreeMap::new();
    for tc in chunks
        .iter()
        .flat_map(|c| &c.choices)
        .flat_map(|choice| choice.delta.tool_calls.iter().flatten())
    {
        let entry = acc.entry(tc.index).or_default();
        if let Some(id) = &tc.id {
            entry.0.push_str(id);
        }
        if let Some(function) = &tc.function {
            entry
                .1
                .push_str(function.name.as_deref().unwrap_or_default());
            entry
                .2
                .push_str(function.arguments.as_deref().unwrap_or_default());
        }
    }
    let got: Vec<(String, String, String)> = acc.into_values().collect();
    let want: Vec<(String, String, String)> = calls
        .iter()
        .map(|(id, name, args)| ((*id).into(), (*name).into(), (*args).into()))
        .collect();
    assert_eq!(got, want);
    let finish = chunks
        .iter()
        .flat_map(|c| &c.choices)
        .find_map(|choice| choice.finish_reason);
    assert_eq!(finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn disconnect_surfaces_as_a_stream_error() {
    let server = ScriptedServer::start(vec![script::text_then_disconnect("I was saying")])
        .await
        .unwrap();
    let (chunks, error) = collect(&server).await.unwrap();
    assert_eq!(content(&chunks), "I was saying");
    assert!(
        matches!(error, Some(OpenAIError::StreamError(_))),
        "a cut stream must not look like a clean end: {error:?}"
    );
}

#[tokio::test]
async fn status_surfaces_as_an_api_error() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Status {
        code: 401,
        message: "Incorrect API key provided".into(),
    }])
    .await
    .unwrap();
    let Err(OpenAIError::ApiError(error)) = collect(&server).await else {
        panic!("expected an API error");
    };
    assert_eq!(error.status_code, 401);
    assert_eq!(error.api_error.message, "Incorrect API key provided");
    assert_eq!(error.api_error.code.as_deref(), Some("invalid_api_key"));
}

#[tokio::test]
async fn malformed_event_is_a_deserialize_error() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        tomo_testkit::StreamStep::Raw("data: {not json\n\n".into()),
        tomo_testkit::StreamStep::Done,
    ])])
    .await
    .unwrap();
    let (_, error) = collect(&server).await.unwrap();
    assert!(
        matches!(error, Some(OpenAIError::JSONDeserialize(..))),
        "{error:?}"
    );
}
