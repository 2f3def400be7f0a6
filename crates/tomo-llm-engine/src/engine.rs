//! The llama.cpp side: one model, one context, requests served one at a time on a dedicated thread.
//!
//! Prefix reuse: each slot (a KV-cache sequence) remembers the tokens it holds. A request takes the slot
//! whose tokens share the longest prefix with its prompt, drops the rest of that slot's cache and evaluates
//! only the new suffix. The persona + tools system turn and the history are the same from turn to turn, so
//! a follow-up evaluates only the last answer and the new user message, whatever the persona's length.
//! Two slots: the conversation keeps one warm while side requests (memory extraction, summaries) use the
//! other instead of evicting it.
//!
//! Conversation requests go first (see `queue.rs`): a side request stops between two steps (a prompt
//! batch, a token) to serve them on the other slot, then goes on with its own cache untouched.
//!
//! Every generation is bounded by a token cap and a wall-time cap, and stops when the client goes away.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::{mpsc, watch};

use crate::api::{ChatRequest, Usage};
use crate::prompt::{Turn, turns};
use crate::queue::Queue;
use crate::slots::{Slot, choose_slot};
use crate::utf8::Utf8Stream;

/// Prompt batch of a side request: the points where it can stop for the conversation come this often
/// (≈ 0.2 s of evaluation on two cores for the default model, where one batch of 512 took seconds).
const SIDE_BATCH: usize = 16;

#[derive(Debug, Clone)]
pub struct Settings {
    pub model: PathBuf,
    pub threads: i32,
    /// Context of each slot, in tokens.
    pub slot_context: u32,
    pub slots: u32,
    /// Upper bound of `max_tokens` (and the default when a request sets none).
    pub max_tokens: u32,
    /// Upper bound of one generation's wall time (a model that never stops).
    pub max_time: Duration,
    pub default_temperature: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Loading { progress: f32 },
    Ready { model: String },
    Failed { message: String },
}

/// One request for the engine thread.
pub struct Job {
    pub request: ChatRequest,
    pub events: mpsc::Sender<GenEvent>,
    /// Set when the client went away: stop at the next token.
    pub cancel: Arc<AtomicBool>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GenEvent {
    Text(String),
    Done {
        finish_reason: &'static str,
        usage: Usage,
    },
    /// The request cannot be served; `status` is the HTTP status when nothing was sent yet.
    Failed {
        status: u16,
        message: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{path}: the model file is missing; install it with `tomo models install` (or the model's name)"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path}: not a GGUF model file ({reason}); reinstall it with `tomo models install --force <name>`"
    )]
    NotGguf { path: PathBuf, reason: String },
    #[error(
        "{path}: llama.cpp cannot load this model (truncated or damaged?); reinstall it with \
         `tomo models install --force <name>`"
    )]
    Rejected { path: PathBuf },
    #[error("{0}")]
    Llama(String),
}

/// Checks what can be checked before llama.cpp reads the file, so the common faults get a clear message.
pub fn check_model_file(path: &Path) -> Result<(), LoadError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing {
            path: path.to_path_buf(),
        },
        _ => LoadError::NotGguf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    })?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| LoadError::NotGguf {
            path: path.to_path_buf(),
            reason: "shorter than a GGUF header".into(),
        })?;
    if &magic != b"GGUF" {
        return Err(LoadError::NotGguf {
            path: path.to_path_buf(),
            reason: "no GGUF magic at its start".into(),
        });
    }
    Ok(())
}

/// Runs on its own thread until `jobs` closes: loads the model (reporting progress), then serves jobs.
pub fn run(
    settings: Settings,
    status: Arc<watch::Sender<Status>>,
    jobs: std::sync::mpsc::Receiver<Job>,
    on_progress: impl FnMut(f32) + 'static,
) {
    let fail = |message: String| {
        tracing::error!("{message}");
        status.send_replace(Status::Failed { message });
    };
    if let Err(error) = check_model_file(&settings.model) {
        return fail(error.to_string());
    }
    let backend = match LlamaBackend::init() {
        Ok(backend) => backend,
        Err(e) => return fail(format!("llama.cpp backend: {e}")),
    };
    let progress_status = Arc::clone(&status);
    let mut on_progress = on_progress;
    let params = LlamaModelParams::default().with_progress_callback(move |progress| {
        progress_status.send_replace(Status::Loading { progress });
        on_progress(progress);
        true
    });
    let model = match LlamaModel::load_from_file(&backend, &settings.model, &params) {
        Ok(model) => model,
        Err(_) => {
            return fail(
                LoadError::Rejected {
                    path: settings.model.clone(),
                }
                .to_string(),
            );
        }
    };
    let slots = settings.slots.max(1);
    let context_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.slot_context * slots))
        .with_n_seq_max(slots)
        .with_n_threads(settings.threads)
        .with_n_threads_batch(settings.threads);
    let context = match model.new_context(&backend, context_params) {
        Ok(context) => context,
        Err(e) => {
            return fail(LoadError::Llama(format!("cannot create a context: {e}")).to_string());
        }
    };
    let template = match model.chat_template(None) {
        Ok(template) => template,
        Err(e) => {
            tracing::warn!("the model has no chat template ({e}); using ChatML");
            match LlamaChatTemplate::new("chatml") {
                Ok(template) => template,
                Err(e) => return fail(format!("chat template: {e}")),
            }
        }
    };
    let name = settings
        .model
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut engine = Engine {
        model: &model,
        context,
        template,
        settings: &settings,
        slots: (0..slots).map(|_| Slot::default()).collect(),
        clock: 0,
        busy: None,
    };
    status.send_replace(Status::Ready { model: name });
    tracing::info!(
        model = %settings.model.display(),
        threads = settings.threads,
        slot_context = settings.slot_context,
        "model loaded"
    );
    let mut queue = Queue::new(jobs);
    while let Some(job) = queue.next() {
        if job.cancel.load(Ordering::Relaxed) {
            continue;
        }
        // With one slot a turn could only run in a side request's middle by evicting its cache: then
        // side requests simply wait their turn.
        let side = job.request.priority == tomo_llm::Priority::Background && slots >= 2;
        let outcome = engine.generate(&job, side.then_some(&mut queue));
        let _ = job.events.blocking_send(outcome);
    }
}

struct Engine<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    template: LlamaChatTemplate,
    settings: &'m Settings,
    slots: Vec<Slot>,
    clock: u64,
    /// The slot of a side request that stopped to let the conversation through: no one else may take it.
    busy: Option<usize>,
}

/// Why a generation stopped early.
enum Stop {
    Cancelled,
    Failed(u16, String),
}

impl Engine<'_> {
    /// Serves one job; the returned event is the last one (done or failed). With `queue` (a side
    /// request), conversation jobs that arrive meanwhile are served in the middle of it.
    fn generate(&mut self, job: &Job, queue: Option<&mut Queue<Job>>) -> GenEvent {
        match self.try_generate(job, queue) {
            Ok(event) => event,
            Err(Stop::Cancelled) => GenEvent::Failed {
                status: 499,
                message: "cancelled".into(),
            },
            Err(Stop::Failed(status, message)) => {
                tracing::warn!(status, "{message}");
                GenEvent::Failed { status, message }
            }
        }
    }

    fn prompt(&self, request: &ChatRequest) -> Result<String, Stop> {
        let turns: Vec<Turn> = turns(request);
        let messages = turns
            .into_iter()
            .map(|turn| LlamaChatMessage::new(turn.role, turn.content))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Stop::Failed(400, format!("a message holds a NUL byte: {e}")))?;
        self.model
            .apply_chat_template(&self.template, &messages, true)
            .map_err(|e| Stop::Failed(500, format!("the chat template failed: {e}")))
    }

    /// Serves the conversation jobs waiting in `queue` while the side request on slot `seq` stands still,
    /// and returns how long that took (the side request's time limit is extended by as much).
    fn serve_urgent(&mut self, seq: usize, queue: Option<&mut Queue<Job>>) -> Duration {
        let started = Instant::now();
        let Some(queue) = queue else {
            return Duration::ZERO;
        };
        while let Some(job) = queue.urgent() {
            if job.cancel.load(Ordering::Relaxed) {
                continue;
            }
            tracing::debug!("a side request stops for the conversation");
            self.busy = Some(seq);
            let outcome = self.generate(&job, None);
            self.busy = None;
            let _ = job.events.blocking_send(outcome);
        }
        started.elapsed()
    }

    fn try_generate(
        &mut self,
        job: &Job,
        mut queue: Option<&mut Queue<Job>>,
    ) -> Result<GenEvent, Stop> {
        let started = Instant::now();
        // Extended by the time a side request stands still for the conversation (which the timings
        // below leave out too).
        let limit = started + self.settings.max_time;
        let mut deadline = limit;
        let request = &job.request;
        let prompt = self.prompt(request)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        let max_tokens = request
            .max_tokens
            .unwrap_or(self.settings.max_tokens)
            .clamp(1, self.settings.max_tokens);
        let room = self.settings.slot_context as usize;
        if tokens.len() + 1 > room {
            return Err(Stop::Failed(
                400,
                format!(
                    "the prompt has {} tokens, more than this engine's context of {room}",
                    tokens.len()
                ),
            ));
        }
        let (seq, cached) = self.pick_slot(&tokens);
        let evaluated = self.evaluate(seq, &tokens, cached, job, &mut deadline, &mut queue)?;
        let paused_in_prompt = deadline - limit;
        let prompt_ms = started
            .elapsed()
            .saturating_sub(paused_in_prompt)
            .as_secs_f64()
            * 1000.0;

        let mut sampler = sampler(
            request,
            self.settings.default_temperature,
            self.model.n_vocab(),
        );
        let mut utf8 = Utf8Stream::default();
        let mut batch = LlamaBatch::new(1, 1);
        let mut last_index = evaluated;
        let mut generated = 0u32;
        let mut first_token_at = None;
        let finish_reason = loop {
            if job.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Cancelled);
            }
            let token = sampler.sample(&self.context, last_index);
            let vocab = self.model.vocab();
            if vocab.is_eog(token) || vocab.is_control(token) {
                break "stop";
            }
            generated += 1;
            first_token_at.get_or_insert_with(Instant::now);
            let piece = vocab.token_to_piece(token, false, None);
            let text = utf8.push(&piece);
            if !text.is_empty() && job.events.blocking_send(GenEvent::Text(text)).is_err() {
                return Err(Stop::Cancelled);
            }
            let position = self.slots[seq].tokens.len();
            if generated >= max_tokens || position + 1 >= room {
                break "length";
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    seconds = self.settings.max_time.as_secs(),
                    "generation stopped at its time limit"
                );
                break "length";
            }
            // The token just sampled is not decoded yet: a conversation job served here overwrites
            // only the logits this side request has already read.
            deadline += self.serve_urgent(seq, queue.as_deref_mut());
            batch.clear();
            batch
                .add(token, position as i32, &[seq as i32], true)
                .map_err(|e| Stop::Failed(500, format!("batch: {e}")))?;
            self.context
                .decode(&mut batch)
                .map_err(|e| Stop::Failed(500, format!("decoding failed: {e}")))?;
            self.slots[seq].tokens.push(token);
            last_index = 0;
        };
        let rest = utf8.finish();
        if !rest.is_empty() && job.events.blocking_send(GenEvent::Text(rest)).is_err() {
            return Err(Stop::Cancelled);
        }
        let usage = Usage {
            prompt_tokens: tokens.len() as u32,
            cached_tokens: cached as u32,
            completion_tokens: generated,
            prompt_ms,
            generation_ms: first_token_at
                .map(|t| {
                    let paused = (deadline - limit).saturating_sub(paused_in_prompt);
                    t.elapsed().saturating_sub(paused).as_secs_f64() * 1000.0
                })
                .unwrap_or(0.0),
        };
        tracing::info!(
            prompt = usage.prompt_tokens,
            cached = usage.cached_tokens,
            generated,
            prompt_ms = format!("{prompt_ms:.0}"),
            finish_reason,
            "generation done"
        );
        Ok(GenEvent::Done {
            finish_reason,
            usage,
        })
    }

    /// The slot for `tokens` (see [`choose_slot`]) and how many of its tokens are reused, capped so at
    /// least one prompt token is evaluated (its logits start the answer).
    fn pick_slot(&mut self, tokens: &[LlamaToken]) -> (usize, usize) {
        let (index, shared) = choose_slot(&self.slots, tokens, self.busy);
        self.clock += 1;
        self.slots[index].last_used = self.clock;
        (index, shared.min(tokens.len().saturating_sub(1)))
    }

    /// Drops the slot's cache after `cached` tokens and evaluates the rest of the prompt in batches
    /// (a side request in small ones, serving the conversation between them). Returns the batch index of
    /// the last prompt token (whose logits the first sample reads).
    fn evaluate(
        &mut self,
        seq: usize,
        tokens: &[LlamaToken],
        cached: usize,
        job: &Job,
        deadline: &mut Instant,
        queue: &mut Option<&mut Queue<Job>>,
    ) -> Result<i32, Stop> {
        let cancel: &AtomicBool = &job.cancel;
        let slot_tokens = &mut self.slots[seq].tokens;
        slot_tokens.truncate(cached);
        self.context
            .clear_kv_cache_seq(Some(seq as u32), Some(cached as u32), None)
            .map_err(|e| Stop::Failed(500, format!("KV cache: {e}")))?;
        let mut n_batch = self.context.n_batch().max(1) as usize;
        if queue.is_some() {
            n_batch = n_batch.min(SIDE_BATCH);
        }
        let mut batch = LlamaBatch::new(n_batch, 1);
        let mut last_index = 0;
        for (chunk_start, chunk) in tokens[cached..]
            .chunks(n_batch)
            .enumerate()
            .map(|(i, c)| (cached + i * n_batch, c))
        {
            *deadline += self.serve_urgent(seq, queue.as_deref_mut());
            if cancel.load(Ordering::Relaxed) {
                return Err(Stop::Cancelled);
            }
            if Instant::now() >= *deadline {
                return Err(Stop::Failed(
                    503,
                    "evaluating the prompt took longer than the time limit".into(),
                ));
            }
            batch.clear();
            for (offset, token) in chunk.iter().enumerate() {
                let position = chunk_start + offset;
                let last = position + 1 == tokens.len();
                batch
                    .add(*token, position as i32, &[seq as i32], last)
                    .map_err(|e| Stop::Failed(500, format!("batch: {e}")))?;
                if last {
                    last_index = offset as i32;
                }
            }
            if let Err(e) = self.context.decode(&mut batch) {
                // What was decoded of this batch is unknown: forget the slot's cache entirely.
                self.slots[seq].tokens.clear();
                let _ = self
                    .context
                    .clear_kv_cache_seq(Some(seq as u32), None, None);
                return Err(Stop::Failed(
                    500,
                    format!("evaluating the prompt failed: {e}"),
                ));
            }
            self.slots[seq].tokens.extend_from_slice(chunk);
        }
        Ok(last_index)
    }
}

/// Chat sampling: a light repetition penalty (small models loop), top-k 40, top-p 0.9, min-p 0.05, then
/// the temperature; temperature 0 is greedy (tests and benchmarks that want the same answer every time).
fn sampler(request: &ChatRequest, default_temperature: f32, n_vocab: i32) -> LlamaSampler {
    let temperature = request.temperature.unwrap_or(default_temperature);
    if temperature <= 0.0 {
        return LlamaSampler::chain_simple([
            LlamaSampler::penalties(n_vocab, 64, 1.05, 0.0, 0.0),
            LlamaSampler::greedy(),
        ]);
    }
    let seed = request.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    });
    LlamaSampler::chain_simple([
        LlamaSampler::penalties(n_vocab, 64, 1.05, 0.0, 0.0),
        LlamaSampler::top_k(40),
        LlamaSampler::top_p(request.top_p.unwrap_or(0.9), 1),
        LlamaSampler::min_p(0.05, 1),
        LlamaSampler::temp(temperature),
        LlamaSampler::dist(seed),
    ])
}
