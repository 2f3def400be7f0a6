//! `tomo bench llm`: the embedded brain as the app meets it. For each installed embedded model: load time,
//! a cold first turn, a first turn after a warm-up at start, follow-up turns (time to first token and
//! generation speed, measured here in the client from the request to the first streamed text), prompt
//! evaluation speed (the engine's own count), and a short quality check (greeting with an emotion tag, a
//! follow-up that needs the earlier turn, a `get_time` call through the real agent loop and tool).
//! Hana's persona and tools (profiles/hana.toml) make the prompt.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tomo_config::manifest::ToolLimits;
use tomo_llm::agent::{AgentConfig, TurnItem, run_turn};
use tomo_llm::tools::{ToolContext, ToolRegistry};
use tomo_llm::{ChatMessage, LlmClient, LlmEndpoint, LlmEvent, ToolDefinition};
use tomo_llm_supervisor::{EngineConfig, LocalEngine};
use tomo_models::{ModelKind, ModelStatus, ModelStore};
use tomo_plugins::instantiate_builtin;
use tomo_protocol::ToolStatus;

use crate::load::load_profile_or_report;

#[derive(Debug, Args)]
pub struct LlmBenchArgs {
    /// Embedded models to measure (default: every installed one).
    pub models: Vec<String>,
    /// The character whose persona and tools make the prompt.
    #[arg(long, short, default_value = "profiles/hana.toml")]
    pub profile: PathBuf,
    /// CPU threads for the engine.
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// Follow-up turns after the first.
    #[arg(long, short, default_value_t = 5)]
    pub turns: usize,
    /// Tokens per measured answer.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: u32,
}

const FIRST: &str = "Hello Hana! How are you today?";
const FOLLOW_UPS: [&str; 6] = [
    "My name is Alex and my cat is called Mochi.",
    "What should I cook tonight?",
    "Tell me one fun fact about cats.",
    "I had a long day at work.",
    "Any tips for sleeping better?",
    "What is my cat called?",
];

/// One streamed answer as the client saw it.
struct Timed {
    text: String,
    ttft: Duration,
    generation_tps: f64,
    prompt_tokens: u64,
    cached_tokens: u64,
    prompt_tps: f64,
}

pub async fn run(args: LlmBenchArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::FAILURE);
    };
    let store = ModelStore::from_env()?;
    let names: Vec<String> = if args.models.is_empty() {
        store
            .manifest
            .models
            .iter()
            .filter(|m| m.kind == ModelKind::Llm)
            .map(|m| m.name.clone())
            .collect()
    } else {
        args.models.clone()
    };
    let persona = profile.character.persona.trim().to_owned();
    let tools = profile_tools(&profile.plugins.enabled)?;
    let definitions = tools.definitions();
    let tools_json = serde_json::to_value(&definitions)?;
    println!(
        "tomo bench llm: {} threads, persona of {} ({} chars) + {} tools, {} tokens per answer",
        args.threads,
        profile.character.name,
        persona.len(),
        definitions.len(),
        args.max_tokens
    );
    for name in names {
        let entry = store.entry(&name)?;
        if store.status(&name)? != ModelStatus::Installed {
            println!("\n{name}: not installed (tomo models install {name}), skipped");
            continue;
        }
        let path = store.path(&name)?;
        let mut config = EngineConfig::new(&path, &name);
        config.expected_size = entry.files.first().map(|f| f.size);
        config.threads = Some(args.threads);
        println!("\n== {name} ({})", path.display());

        // Cold: the first turn evaluates persona + tools + the user's words.
        let started = Instant::now();
        let engine = LocalEngine::start(config.clone(), |_| {}).await?;
        let load = started.elapsed();
        let client = engine_client(&engine, &name, args.max_tokens)?;
        let first = vec![ChatMessage::system(&persona), ChatMessage::user(FIRST)];
        let cold = timed(&client, &first, &definitions).await?;
        engine.stop().await;
        println!("load                     {:>6.2} s", load.as_secs_f64());
        println!(
            "first turn, cold         TTFT {:>6.2} s   prompt {} tokens at {:.0} tok/s   generation {:.1} tok/s",
            cold.ttft.as_secs_f64(),
            cold.prompt_tokens,
            cold.prompt_tps,
            cold.generation_tps
        );

        // Warm: the prefix was evaluated while the app started.
        let engine = LocalEngine::start(config, |_| {}).await?;
        let client = engine_client(&engine, &name, args.max_tokens)?;
        let warm_up = engine
            .warm_up(&serde_json::to_value(&first[..1])?, &tools_json)
            .await?
            .elapsed;
        let warm = timed(&client, &first, &definitions).await?;
        println!(
            "warm-up at start         {:>6.2} s   first turn after it: TTFT {:.2} s ({} of {} prompt tokens cached)",
            warm_up.as_secs_f64(),
            warm.ttft.as_secs_f64(),
            warm.cached_tokens,
            warm.prompt_tokens
        );
        let mut messages = first.clone();
        messages.push(ChatMessage::assistant(&warm.text));
        let mut ttfts = Vec::new();
        let mut speeds = Vec::new();
        for question in FOLLOW_UPS.iter().cycle().take(args.turns) {
            messages.push(ChatMessage::user(*question));
            let answer = timed(&client, &messages, &definitions).await?;
            println!(
                "follow-up                TTFT {:>6.2} s   prompt {} tokens, {} cached, new at {:.0} tok/s   generation {:.1} tok/s",
                answer.ttft.as_secs_f64(),
                answer.prompt_tokens,
                answer.cached_tokens,
                answer.prompt_tps,
                answer.generation_tps
            );
            ttfts.push(answer.ttft.as_secs_f64());
            speeds.push(answer.generation_tps);
            messages.push(ChatMessage::assistant(&answer.text));
        }
        if !ttfts.is_empty() {
            println!(
                "follow-ups               TTFT P50 {:.2} s (min {:.2}, max {:.2})   generation P50 {:.1} tok/s",
                median(&mut ttfts.clone()),
                ttfts.iter().cloned().fold(f64::MAX, f64::min),
                ttfts.iter().cloned().fold(0.0, f64::max),
                median(&mut speeds)
            );
        }
        quality(&engine, &name, &persona, &tools).await?;
        engine.stop().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// The tools of the profile's built-in plugins (MCP and hook-only plugins add none to the prompt here).
fn profile_tools(enabled: &[String]) -> anyhow::Result<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    for id in enabled {
        let Some(parts) = instantiate_builtin(id, &toml::Table::new(), &ToolLimits::default())
        else {
            continue;
        };
        for tool in parts.with_context(|| format!("plugin {id}"))?.tools {
            registry.register(tool)?;
        }
    }
    Ok(registry)
}

fn engine_client(engine: &LocalEngine, model: &str, max_tokens: u32) -> anyhow::Result<LlmClient> {
    Ok(tomo_openai::connect(LlmEndpoint {
        base_url: engine.base_url().to_owned(),
        model: model.to_owned(),
        api_key: Some(engine.api_key().to_owned()),
        temperature: Some(0.7),
        max_tokens: Some(max_tokens),
        idle_timeout: Duration::from_secs(120),
    })?)
}

async fn timed(
    client: &LlmClient,
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
) -> anyhow::Result<Timed> {
    let sent = Instant::now();
    let mut stream = client.stream_chat(messages, tools).await?;
    let (mut text, mut first, mut last, mut usage) = (String::new(), None, sent, None);
    while let Some(event) = stream.next().await {
        match event? {
            LlmEvent::Text(delta) => {
                let now = Instant::now();
                first.get_or_insert(now);
                last = now;
                text.push_str(&delta);
            }
            LlmEvent::Usage(value) => usage = Some(value),
            _ => {}
        }
    }
    let usage = usage.unwrap_or_default();
    let completion = usage["completion_tokens"].as_u64().unwrap_or(0);
    let first = first.unwrap_or(last);
    let span = last.duration_since(first).as_secs_f64();
    Ok(Timed {
        text,
        ttft: first.duration_since(sent),
        generation_tps: if span > 0.0 {
            completion.saturating_sub(1) as f64 / span
        } else {
            0.0
        },
        prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        prompt_tps: usage["timings"]["prompt_per_second"]
            .as_f64()
            .unwrap_or(0.0),
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Greeting, memory of the earlier turn, an emotion tag, a tool call: printed with the answers.
async fn quality(
    engine: &LocalEngine,
    name: &str,
    persona: &str,
    tools: &ToolRegistry,
) -> anyhow::Result<()> {
    let client = engine_client(engine, name, 120)?;
    let mut messages = vec![
        ChatMessage::system(persona),
        ChatMessage::user("Hello Hana!"),
    ];
    let (greeting, _) = agent_turn(&client, &ToolRegistry::new(), messages.clone()).await?;
    let tagged = ["[joy]", "[sad]", "[angry]", "[surprised]", "[neutral]"]
        .iter()
        .any(|tag| greeting.contains(tag));
    messages.push(ChatMessage::assistant(&greeting));
    messages.push(ChatMessage::user(
        "My name is Alex and my cat is called Mochi.",
    ));
    let (intro, _) = agent_turn(&client, &ToolRegistry::new(), messages.clone()).await?;
    messages.push(ChatMessage::assistant(&intro));
    messages.push(ChatMessage::user(
        "What is my cat's name, and what is mine?",
    ));
    let (recall, _) = agent_turn(&client, &ToolRegistry::new(), messages).await?;
    let remembers = recall.contains("Mochi") && recall.contains("Alex");
    let time = vec![
        ChatMessage::system(persona),
        ChatMessage::user("What time is it right now?"),
    ];
    let (time_answer, called) = agent_turn(&client, tools, time).await?;
    let verdict = |ok: bool| if ok { "pass" } else { "FAIL" };
    println!("quality  greeting         {greeting:?}");
    println!("         emotion tag      {}", verdict(tagged));
    println!(
        "         recall           {} {recall:?}",
        verdict(remembers)
    );
    println!(
        "         get_time         {} {time_answer:?}",
        verdict(called && !time_answer.trim().is_empty())
    );
    Ok(())
}

/// One turn through Tomo's agent loop (text tool calls parsed, real tools run); returns the shown text
/// and whether `get_time` completed.
async fn agent_turn(
    client: &LlmClient,
    tools: &ToolRegistry,
    messages: Vec<ChatMessage>,
) -> anyhow::Result<(String, bool)> {
    let data = tempfile::tempdir()?;
    let (tx, mut rx) = mpsc::channel(256);
    let ctx = ToolContext {
        agent_id: "bench".to_owned(),
        data_dir: data.path().to_path_buf(),
        cancel: CancellationToken::new(),
    };
    let collector = tokio::spawn(async move {
        let (mut text, mut called) = (String::new(), false);
        while let Some(item) = rx.recv().await {
            match item {
                TurnItem::Text(delta) => text.push_str(&delta),
                TurnItem::ToolCall(event) => {
                    called |= event.tool_name == "get_time" && event.status == ToolStatus::Completed
                }
                _ => {}
            }
        }
        (text, called)
    });
    run_turn(client, tools, &AgentConfig::default(), messages, ctx, tx).await?;
    Ok(collector.await?)
}
