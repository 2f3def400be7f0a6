//! The embedded brain for every front end: the `tomo-llm-engine` process (llama.cpp, supervised by
//! tomo-llm-supervisor) behind the session's [`LlmConnector`]. The builder installs the model on the first
//! run and starts the engine before the session exists (with progress, [`prepare`]); the character's
//! `connect_embedded` then finds it running. Characters on the same model share one engine (a switch
//! between them reuses it); the engine lives while a character uses it and stops with
//! [`Brain::shutdown`]. The engine's token is its own: it is made per run, lives only in the embedded
//! client's endpoint, and never enters the session's key overrides, so no `set_llm` can carry it elsewhere
//! (and no user key goes to the engine).
//!
//! Threads: see [`ENGINE_THREADS`].

mod client;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tomo_config::profile::Profile;
use tomo_llm::{EmbeddedRequest, LlmClient, LlmConnector, LlmEndpoint, LlmError, WarmedUp};
use tomo_llm_supervisor::{EngineConfig, EngineProgress, EngineState, LocalEngine};
use tomo_models::{InstallEvent, InstallOptions, ModelKind, ModelStatus, ModelStore};

use crate::env::EnvOptions;
use crate::notices::{Notice, Notify};

pub use client::Usage;

/// CPU threads of the engine. Measured on the 2-core dev machine (README, "The embedded brain"): the
/// engine shares the cores with whisper, Piper and the VAD, and ggml's worker threads spin while they
/// wait for each other, so a second thread that has to share its core with Piper costs more than it
/// brings. `TOMO_LLM_THREADS` overrides it.
pub const ENGINE_THREADS: u32 = 2;

/// Environment variable overriding [`ENGINE_THREADS`].
pub const THREADS_ENV: &str = "TOMO_LLM_THREADS";

/// Answers longer than this are cut by the engine whatever the profile asks.
const MAX_ANSWER_TOKENS: u32 = 1024;

/// One running engine and what it was started for.
pub(crate) struct Engine {
    model: String,
    /// Tokens per conversation slot.
    context: u32,
    engine: LocalEngine,
}

/// Figures of recent requests, for tests and `tomo bench` (the engine's own counts).
#[derive(Debug, Clone, Default)]
pub struct BrainStats {
    pub warm_ups: Vec<WarmedUp>,
    /// Streamed requests (turns, memory extraction, summaries), oldest first; the last 32.
    pub requests: Vec<Usage>,
}

/// The embedded brain of one front end: starts, shares and stops the engine.
pub struct Brain {
    store: ModelStore,
    notify: Notify,
    /// The engine a character uses (weak: it stops when no character does).
    current: tokio::sync::Mutex<Weak<Engine>>,
    /// Started by the builder before the session exists; handed to the first character.
    preloaded: Mutex<Option<Arc<Engine>>>,
    stats: Arc<Mutex<BrainStats>>,
}

impl Brain {
    pub fn new(store: ModelStore, notify: Notify) -> Arc<Self> {
        Arc::new(Self {
            store,
            notify,
            current: tokio::sync::Mutex::new(Weak::new()),
            preloaded: Mutex::new(None),
            stats: Arc::default(),
        })
    }

    pub fn stats(&self) -> BrainStats {
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The embedded models the manifest knows, with whether each is installed (for messages and
    /// `tomo profile check`). Installed means the file is there with its size; the hash is checked by
    /// the installer.
    pub fn known_models(store: &ModelStore) -> Vec<(String, bool)> {
        store
            .manifest
            .models
            .iter()
            .filter(|m| m.kind == ModelKind::Llm)
            .map(|m| {
                let installed = m.files.first().is_some_and(|file| {
                    std::fs::metadata(store.file_path(&file.path))
                        .is_ok_and(|meta| meta.len() == file.size)
                });
                (m.name.clone(), installed)
            })
            .collect()
    }

    fn engine_config(&self, model: &str, context: u32) -> Result<EngineConfig, LlmError> {
        let entry = self
            .store
            .entry(model)
            .ok()
            .filter(|entry| entry.kind == ModelKind::Llm)
            .ok_or_else(|| {
                let known: Vec<String> = Self::known_models(&self.store)
                    .into_iter()
                    .map(|(name, installed)| {
                        if installed {
                            format!("{name} (installed)")
                        } else {
                            name
                        }
                    })
                    .collect();
                LlmError::Brain(format!(
                    "there is no embedded model `{model}`; the embedded models are {}",
                    known.join(", ")
                ))
            })?;
        let file = entry
            .files
            .first()
            .ok_or_else(|| LlmError::Brain(format!("the manifest lists no file for `{model}`")))?;
        let mut config = EngineConfig::new(self.store.file_path(&file.path), model);
        config.expected_size = Some(file.size);
        config.threads = Some(threads());
        config.context = context;
        config.max_tokens = MAX_ANSWER_TOKENS;
        Ok(config)
    }

    /// The running engine for `model` with room for `context` tokens per slot, or a new one (loading it
    /// reports to `progress`). A different model replaces the engine for the characters that follow;
    /// characters still on the old one keep it until they go.
    async fn engine(
        &self,
        model: &str,
        context: u32,
        progress: &mut (dyn FnMut(EngineProgress) + Send),
    ) -> Result<Arc<Engine>, LlmError> {
        let mut current = self.current.lock().await;
        if let Some(engine) = current.upgrade()
            && engine.model == model
            && engine.context >= context
            && !matches!(
                engine.engine.state(),
                EngineState::Failed { .. } | EngineState::Stopped
            )
        {
            return Ok(engine);
        }
        let config = self.engine_config(model, context)?;
        let started = Instant::now();
        let engine = LocalEngine::start(config, progress)
            .await
            .map_err(|error| LlmError::Brain(start_failed(&error.to_string())))?;
        tracing::info!(
            model,
            context,
            threads = threads(),
            ms = started.elapsed().as_millis() as u64,
            "embedded brain started"
        );
        watch_state(&engine, Arc::clone(&self.notify));
        let engine = Arc::new(Engine {
            model: model.to_owned(),
            context,
            engine,
        });
        *current = Arc::downgrade(&engine);
        Ok(engine)
    }

    /// Starts the engine ahead of the session (the builder), so loading shows as progress at start-up.
    pub async fn preload(
        &self,
        model: &str,
        request: &EmbeddedRequest,
        progress: &mut (dyn FnMut(EngineProgress) + Send),
    ) -> Result<(), LlmError> {
        let engine = self.engine(model, slot_context(request), progress).await?;
        *self
            .preloaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(engine);
        Ok(())
    }

    /// A client for the character: the running engine's, or a new engine's.
    pub async fn client(&self, request: EmbeddedRequest) -> Result<LlmClient, LlmError> {
        let model = request.model.clone();
        let mut log = |p: EngineProgress| tracing::debug!(?p, "embedded brain loading");
        let engine = self
            .engine(&model, slot_context(&request), &mut log)
            .await?;
        // The character holds it now.
        self.preloaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        client::connect(engine, &request, Arc::clone(&self.stats))
    }

    /// The running engine's process id (diagnostics, tests); `None` when no character uses one.
    pub fn engine_pid(&self) -> Option<u32> {
        let preloaded = self
            .preloaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|engine| engine.engine.pid());
        preloaded.or_else(|| {
            self.current
                .try_lock()
                .ok()
                .and_then(|current| current.upgrade())
                .map(|engine| engine.engine.pid())
        })
    }

    /// Stops the engine (and waits for it), whoever still holds a client.
    pub async fn shutdown(&self) {
        let preloaded = self
            .preloaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let engine = preloaded.or_else(|| {
            self.current
                .try_lock()
                .ok()
                .and_then(|current| current.upgrade())
        });
        if let Some(engine) = engine {
            engine.engine.clone().stop().await;
        }
    }
}

fn threads() -> u32 {
    std::env::var(THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(ENGINE_THREADS)
}

/// Room per slot: the character's prompt budget (estimated tokens, which run high for English), its
/// longest answer and a margin, in steps of 512, at least 2048.
fn slot_context(request: &EmbeddedRequest) -> u32 {
    let answer = request
        .max_tokens
        .unwrap_or(MAX_ANSWER_TOKENS)
        .min(MAX_ANSWER_TOKENS);
    let wanted = request
        .prompt_budget
        .saturating_add(answer)
        .saturating_add(256);
    wanted.div_ceil(512).saturating_mul(512).clamp(2048, 16_384)
}

fn start_failed(reason: &str) -> String {
    format!("the embedded brain could not start: {reason}")
}

/// Tells every client when the engine dies, comes back, or stays down.
fn watch_state(engine: &LocalEngine, notify: Notify) {
    let mut states = engine.subscribe();
    tokio::spawn(async move {
        while states.changed().await.is_ok() {
            let state = states.borrow_and_update().clone();
            match state {
                EngineState::Restarting { reason } => notify(Notice::warning(format!(
                    "the embedded brain stopped ({reason}); starting it again (the answer in progress \
                     is lost, the next one works)"
                ))),
                EngineState::Ready => notify(Notice::info("the embedded brain is back")),
                EngineState::Failed { reason } => notify(Notice::error(format!(
                    "the embedded brain stopped and could not be started again ({reason}); restart Tomo, \
                     or pick another language model in Settings → Language model"
                ))),
                EngineState::Stopped => return,
            }
        }
    });
}

/// The session's connector: endpoints through the OpenAI-compatible client, the embedded brain here.
pub struct BrainConnector {
    pub brain: Arc<Brain>,
}

impl LlmConnector for BrainConnector {
    fn connect(&self, endpoint: LlmEndpoint) -> Result<LlmClient, LlmError> {
        tomo_openai::connect(endpoint)
    }

    fn connect_embedded(
        &self,
        request: EmbeddedRequest,
    ) -> BoxFuture<'_, Result<LlmClient, LlmError>> {
        Box::pin(self.brain.client(request))
    }
}

/// The embedded model a session would start with: the profile's, unless a front end overrides the
/// endpoint (`--llm-base-url`: that endpoint instead) or the model (`--llm-model`: another embedded
/// model). `None`: the profile talks to an endpoint.
pub fn embedded_model(profile: &Profile, options: &EnvOptions) -> Option<String> {
    if options.llm_base_url.is_some() {
        return None;
    }
    let profile_model = profile.llm.embedded_model()?;
    Some(
        options
            .llm_model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| profile_model.to_owned()),
    )
}

/// The embedded model to install for `profile` when it is missing (or damaged), for the first-run
/// install and its message.
pub fn missing_model(
    store: &ModelStore,
    profile: &Profile,
    options: &EnvOptions,
) -> Option<String> {
    let model = embedded_model(profile, options)?;
    match store.status(&model) {
        Ok(ModelStatus::Installed) => None,
        Ok(_) => Some(model),
        // Unknown: nothing to install; starting the engine says which models there are.
        Err(_) => None,
    }
}

/// What loading the brain reports to the front end (the desktop's start-up panel, the CLI's line).
#[derive(Debug, Clone, PartialEq)]
pub enum BrainProgress {
    Loading { model: String, fraction: f32 },
    Ready { model: String, took: Duration },
}

/// The builder's part: install the profile's embedded model if it is missing (`install`, the first
/// run), start the engine with progress, and hand back the brain for the session's connector. `None`:
/// the profile talks to an endpoint (the brain is still there for a later `set_llm`).
pub(crate) async fn prepare(
    brain: &Arc<Brain>,
    profile: &Profile,
    options: &EnvOptions,
    install: &mut Option<OnInstall>,
    progress: &mut (dyn FnMut(BrainProgress) + Send),
) -> Result<(), LlmError> {
    let Some(model) = embedded_model(profile, options) else {
        return Ok(());
    };
    if let Some(missing) = missing_model(&brain.store, profile, options)
        && let Some(on_event) = install.take()
    {
        let (installed, on_event) = install_model(&brain.store, &missing, on_event).await;
        *install = Some(on_event);
        installed?;
    }
    let llm = &profile.llm;
    let request = EmbeddedRequest {
        model: model.clone(),
        temperature: llm.temperature,
        max_tokens: llm.max_tokens,
        idle_timeout: Duration::from_secs_f64(llm.request_timeout_secs.max(1.0)),
        prompt_budget: u32::try_from(llm.context_budget_tokens).unwrap_or(u32::MAX),
    };
    let mut report = |p: EngineProgress| match p {
        EngineProgress::Spawned => {}
        EngineProgress::Loading(fraction) => progress(BrainProgress::Loading {
            model: model.clone(),
            fraction,
        }),
        EngineProgress::Ready(took) => progress(BrainProgress::Ready {
            model: model.clone(),
            took,
        }),
    };
    brain.preload(&model, &request, &mut report).await
}

/// Reports the first-run install's progress (the builder's [`crate::ModelInstall`] callback).
pub(crate) type OnInstall = Box<dyn FnMut(InstallEvent) + Send>;

/// Installs one embedded model (blocking download and hashing, off the async workers); the callback
/// comes back for whatever is installed next.
async fn install_model(
    store: &ModelStore,
    model: &str,
    mut on_event: OnInstall,
) -> (Result<(), LlmError>, OnInstall) {
    let (store, name) = (store.clone(), model.to_owned());
    let task = tokio::task::spawn_blocking(move || {
        let outcome = tomo_models::install(
            &store,
            std::slice::from_ref(&name),
            &InstallOptions::default(),
            &mut *on_event,
        )
        .map(|_| ())
        .map_err(|error| {
            LlmError::Brain(format!(
                "cannot install the embedded model `{name}` into {}: {error}",
                store.root.display()
            ))
        });
        (outcome, on_event)
    });
    match task.await {
        Ok(done) => done,
        Err(error) => (
            Err(LlmError::Brain(format!("the install stopped: {error}"))),
            Box::new(|_: InstallEvent| {}),
        ),
    }
}

/// Where the engine binary is, for messages (`locate_engine` does the looking).
pub fn engine_binary() -> Option<PathBuf> {
    tomo_llm_supervisor::locate_engine().ok()
}

#[cfg(test)]
mod tests;
