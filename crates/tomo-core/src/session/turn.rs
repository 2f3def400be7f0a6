//! One turn, from the user's words to the drained output. The turn task owns the pipeline and the agent
//! loop; it does not touch the session state: it reports to the coordinator through [`TurnMsg`]s, and the
//! coordinator emits every event, so events keep one total order.

use std::sync::Arc;

use chrono::Utc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::character::Character;
use super::echo_guard::{self, EchoGuard};
use super::heard;
use super::hooks::{self, HookFailure};
use super::request;
use crate::history::HistoryRecord;
use crate::pipeline::{Pipeline, PipelineItem, PipelineOutput};
use crate::sink::{OutputSink, Playhead, SinkError};
use tomo_llm::ChatMessage;
use tomo_llm::agent::{self, AgentError, TurnItem, TurnTranscript};
use tomo_llm::tools::ToolContext;
use tomo_plugin_api::hooks::{HookContext, TurnRecord};
use tomo_protocol::{ErrorCode, Event, TurnId};

/// What a turn task tells the coordinator.
#[derive(Debug)]
pub(crate) enum TurnMsg {
    Event(Event),
    /// The first sentence went to the output: Thinking -> Speaking.
    Speaking,
    /// The turn is over (finished, aborted or failed), including its after-playback hooks.
    Done,
}

pub(crate) struct TurnInput {
    pub turn_id: TurnId,
    /// The user-role message sent to the model (for a proactive turn, its marked blocks).
    pub user_text: String,
    /// What `turn_started` shows: the user's words, or `[proactive] <reason>`.
    pub shown_text: String,
    pub proactive: bool,
    /// The hooks' blocks, when the pause already gathered them for these words.
    pub before_turn: Option<request::BeforeTurn>,
}

struct Reporter {
    turn_id: TurnId,
    tx: mpsc::UnboundedSender<(TurnId, TurnMsg)>,
}

impl Reporter {
    fn send(&self, msg: TurnMsg) {
        // The coordinator outlives its turns; a send can only fail during shutdown, when nobody listens.
        let _ = self.tx.send((self.turn_id, msg));
    }

    fn event(&self, event: Event) {
        self.send(TurnMsg::Event(event));
    }

    fn hook_failures(&self, failures: Vec<HookFailure>) {
        for failure in failures {
            tracing::warn!(hook = %failure.hook, stage = ?failure.stage, message = %failure.message, "hook failed");
            self.event(Event::HookFailed {
                turn_id: self.turn_id,
                hook: failure.hook,
                stage: failure.stage,
                message: failure.message,
            });
        }
    }
}

pub(crate) async fn run_turn(
    character: Arc<Character>,
    sink: Arc<dyn OutputSink>,
    input: TurnInput,
    cancel: CancellationToken,
    tx: mpsc::UnboundedSender<(TurnId, TurnMsg)>,
) {
    let reporter = Reporter {
        turn_id: input.turn_id,
        tx,
    };
    execute(&character, sink.as_ref(), &input, &cancel, &reporter).await;
    reporter.send(TurnMsg::Done);
}

async fn execute(
    character: &Arc<Character>,
    sink: &dyn OutputSink,
    input: &TurnInput,
    cancel: &CancellationToken,
    reporter: &Reporter,
) {
    let turn_id = input.turn_id;
    reporter.event(Event::TurnStarted {
        turn_id,
        user_text: input.shown_text.clone(),
    });
    let user_record = record(
        turn_id,
        ChatMessage::user(&input.user_text),
        input.proactive,
    );
    if let Err(error) = character.append_history(vec![user_record]) {
        reporter.event(history_error(&error));
    }
    let (memory, failures) = match &input.before_turn {
        Some(gathered) => (gathered.memory.clone(), gathered.failures.clone()),
        None => tokio::select! {
            () = cancel.cancelled() => {
                reporter.event(Event::TurnAborted { turn_id, partial_text: String::new() });
                return;
            }
            outcome = request::memory_blocks(character, turn_id, &input.user_text) => outcome,
        },
    };
    reporter.hook_failures(failures);
    let request::Request {
        messages,
        offline_tools,
    } = request::build(character, turn_id, &input.user_text, &memory).await;
    let tools = offline_tools.as_ref().unwrap_or(&character.tools);
    let hook_ctx = request::hook_context(character, turn_id);
    let tool_ctx = ToolContext {
        agent_id: character.agent_id().to_owned(),
        data_dir: character.data_dir.clone(),
        cancel: cancel.clone(),
    };
    let (items_tx, items_rx) = mpsc::channel(256);
    let agent_run = agent::run_turn(
        &character.client,
        tools,
        &character.agent_config,
        messages,
        tool_ctx,
        items_tx,
    );
    let consume = consume_items(character, sink, turn_id, items_rx, reporter);
    let (outcome, mut spoken) = tokio::join!(agent_run, consume);

    match outcome {
        Ok(mut outcome) => {
            echo_guard::clean_transcript(&mut outcome.transcript);
            spoken.flush(sink, reporter);
            reporter.event(Event::TurnFinished {
                turn_id,
                end: outcome.end,
                text: outcome.transcript.text.clone(),
            });
            // On speakers the answer is stored once it was heard (or as far as it was, on an
            // interrupt); a text answer has been seen whole already.
            let heard_later = sink.plays_audio();
            if !heard_later {
                save_transcript(
                    character,
                    turn_id,
                    input.proactive,
                    &outcome.transcript,
                    false,
                    reporter,
                );
            }
            let turn = Arc::new(TurnRecord {
                user_text: input.user_text.clone(),
                assistant_text: outcome.transcript.text.clone(),
                proactive: input.proactive,
            });
            // Folding old turns into the summary runs while the output drains, off the hot path: a new
            // user message cancels it, and it is retried after the next turn. Then the next turn's
            // prefix is warmed (a new summary changes the system prompt), once the answer is in the
            // history: on speakers that is when it has been heard, and a prefix warmed without it
            // left the next turn evaluating the whole answer again while the user waited (≈ 1 s for
            // a 50-token answer on two cores).
            // Detached: the turn (and the state's return to Idle) does not wait for it.
            let warm_next = || {
                let character = Arc::clone(character);
                tokio::spawn(async move { super::warm::next_prefix(&character).await });
            };
            let compact = async {
                let compacted = tokio::select! {
                    () = cancel.cancelled() => false,
                    () = character.compact_history(turn_id) => true,
                };
                if compacted && !heard_later {
                    warm_next();
                }
                compacted
            };
            let (heard, compacted) = tokio::join!(
                finish_output(character, sink, turn_id, turn, hook_ctx, cancel, reporter),
                compact
            );
            if heard_later {
                match heard {
                    Heard::All => save_transcript(
                        character,
                        turn_id,
                        input.proactive,
                        &outcome.transcript,
                        false,
                        reporter,
                    ),
                    Heard::Until(playhead) => {
                        let said = heard::heard_text(&spoken.shown, playhead);
                        let cut = heard::heard_transcript(&outcome.transcript, &said);
                        save_transcript(character, turn_id, input.proactive, &cut, true, reporter);
                        reporter.event(Event::TurnAborted {
                            turn_id,
                            partial_text: said,
                        });
                    }
                }
                if compacted && !cancel.is_cancelled() {
                    warm_next();
                }
            }
        }
        Err(AgentError::Cancelled { mut transcript }) => {
            echo_guard::clean_transcript(&mut transcript);
            let playhead = sink.playhead(turn_id);
            sink.interrupt();
            let (stored, partial_text) = match playhead {
                Some(playhead) => {
                    let said = heard::heard_text(&spoken.shown, playhead);
                    (heard::heard_transcript(&transcript, &said), said)
                }
                None => {
                    let partial = transcript.text.clone();
                    (transcript, partial)
                }
            };
            save_transcript(character, turn_id, input.proactive, &stored, true, reporter);
            reporter.event(Event::TurnAborted {
                turn_id,
                partial_text,
            });
        }
        Err(AgentError::Llm {
            error,
            mut transcript,
        }) => {
            echo_guard::clean_transcript(&mut transcript);
            // Sentences already spoken stay; the rest of the pipeline is flushed so nothing shown is lost.
            spoken.flush(sink, reporter);
            save_transcript(
                character,
                turn_id,
                input.proactive,
                &transcript,
                true,
                reporter,
            );
            reporter.event(Event::Error {
                code: error.code(),
                message: super::advice::llm_error_message(
                    &error,
                    &character.client.endpoint().base_url,
                    character.embedded,
                ),
                // This turn failed; the next one asks the model afresh.
                recoverable: true,
            });
            // What was said before the failure plays out, unless the turn is stopped (its audio may
            // be held for speech over it, and a hold only ends with the turn).
            tokio::select! {
                () = cancel.cancelled() => sink.interrupt(),
                _ = sink.finish_turn(turn_id) => {}
            }
        }
    }
}

/// How much of a finished answer reached the user.
enum Heard {
    All,
    /// Interrupted on speakers: up to here.
    Until(Playhead),
}

/// Text complete: run after-turn hooks while the output drains, then after-playback hooks.
async fn finish_output(
    character: &Character,
    sink: &dyn OutputSink,
    turn_id: TurnId,
    turn: Arc<TurnRecord>,
    hook_ctx: Arc<HookContext>,
    cancel: &CancellationToken,
    reporter: &Reporter,
) -> Heard {
    let after_turn = hooks::after(
        &character.hooks,
        hooks::AfterStage::Turn,
        Arc::clone(&turn),
        Arc::clone(&hook_ctx),
        character.hook_timeout,
    );
    let drained = async {
        tokio::select! {
            () = cancel.cancelled() => Err(SinkError::Interrupted),
            drained = sink.finish_turn(turn_id) => drained,
        }
    };
    let (after_turn_failures, drained) = tokio::join!(after_turn, drained);
    reporter.hook_failures(after_turn_failures);
    match drained {
        Ok(()) => {
            reporter.event(Event::PlaybackDrained { turn_id });
            let failures = hooks::after(
                &character.hooks,
                hooks::AfterStage::Playback,
                turn,
                hook_ctx,
                character.hook_timeout,
            )
            .await;
            reporter.hook_failures(failures);
            Heard::All
        }
        Err(SinkError::Interrupted) => {
            let playhead = sink.playhead(turn_id);
            sink.interrupt();
            match playhead {
                Some(playhead) => Heard::Until(playhead),
                None => {
                    reporter.event(Event::TurnAborted {
                        turn_id,
                        partial_text: turn.assistant_text.clone(),
                    });
                    Heard::All
                }
            }
        }
        Err(error) => {
            reporter.event(Event::Error {
                code: ErrorCode::Output,
                message: error.to_string(),
                recoverable: error.is_recoverable(),
            });
            Heard::All
        }
    }
}

/// The pipeline side of a turn: raw deltas become sentences for the sink, in order with tool events.
struct Spoken {
    turn_id: TurnId,
    pipeline: Pipeline,
    sentences: u32,
    /// (index, display text) of every sentence shown, for what was heard of an interrupted answer.
    shown: Vec<(u32, String)>,
    echo_guard: EchoGuard,
    /// The first sentence's text the sink was asked to prepare (see [`OutputSink::prepare`]).
    prepared: Option<String>,
}

impl Spoken {
    fn emit(&mut self, items: Vec<PipelineOutput>, sink: &dyn OutputSink, reporter: &Reporter) {
        for item in items {
            match item {
                PipelineOutput::Sentence(sentence) => {
                    reporter.event(Event::Sentence {
                        turn_id: self.turn_id,
                        sentence: sentence.clone(),
                    });
                    if self.sentences == 0 {
                        reporter.send(TurnMsg::Speaking);
                    }
                    self.sentences += 1;
                    self.shown
                        .push((sentence.index, sentence.display_text.clone()));
                    if let Err(error) = sink.enqueue(self.turn_id, sentence) {
                        reporter.event(Event::Error {
                            code: ErrorCode::Output,
                            message: error.to_string(),
                            recoverable: error.is_recoverable(),
                        });
                    }
                }
                PipelineOutput::ToolCall(call) => reporter.event(Event::ToolCall {
                    turn_id: self.turn_id,
                    call,
                }),
                // Only sentences and structured items leave the pipeline.
            }
        }
    }

    /// While no sentence has gone out and the text stops at a sentence end only the next delta can
    /// confirm, the sink may start on that sentence's speech: with a model writing a token every 40-70 ms
    /// (the embedded brain) the wait for the token after `!` is as long as synthesizing a short sentence.
    fn prepare_first(&mut self, sink: &dyn OutputSink) {
        if self.sentences > 0 || !sink.plays_audio() {
            return;
        }
        let Some(text) = self
            .pipeline
            .sentence_if_ended()
            .and_then(|sentence| sentence.tts_text)
        else {
            return;
        };
        if self.prepared.as_ref() != Some(&text) {
            sink.prepare(self.turn_id, &text);
            self.prepared = Some(text);
        }
    }

    /// Text the echo guard held back (a possible marker start), passed on as the model's text.
    fn release_held(&mut self, sink: &dyn OutputSink, reporter: &Reporter) {
        let held = self.echo_guard.finish();
        if held.is_empty() {
            return;
        }
        reporter.event(Event::TextDelta {
            turn_id: self.turn_id,
            delta: held.clone(),
        });
        let out = self.pipeline.push(PipelineItem::Text(held));
        self.emit(out, sink, reporter);
    }

    fn flush(&mut self, sink: &dyn OutputSink, reporter: &Reporter) {
        self.release_held(sink, reporter);
        let rest = self.pipeline.finish();
        self.emit(rest, sink, reporter);
    }
}

async fn consume_items(
    character: &Character,
    sink: &dyn OutputSink,
    turn_id: TurnId,
    mut items: mpsc::Receiver<TurnItem>,
    reporter: &Reporter,
) -> Spoken {
    let mut spoken = Spoken {
        turn_id,
        pipeline: Pipeline::new(&character.pipeline_settings),
        sentences: 0,
        shown: Vec::new(),
        echo_guard: EchoGuard::default(),
        prepared: None,
    };
    while let Some(item) = items.recv().await {
        match item {
            TurnItem::Text(delta) => {
                let delta = spoken.echo_guard.push(&delta);
                if delta.is_empty() {
                    continue;
                }
                reporter.event(Event::TextDelta {
                    turn_id,
                    delta: delta.clone(),
                });
                let out = spoken.pipeline.push(PipelineItem::Text(delta));
                spoken.emit(out, sink, reporter);
                spoken.prepare_first(sink);
            }
            TurnItem::Reasoning(delta) => {
                if character.show_reasoning {
                    reporter.event(Event::ReasoningDelta { turn_id, delta });
                }
            }
            TurnItem::ToolCall(call) => {
                spoken.release_held(sink, reporter);
                let out = spoken.pipeline.push(PipelineItem::ToolCall(call));
                spoken.emit(out, sink, reporter);
            }
            TurnItem::Retrying { attempt, error } => {
                tracing::info!(attempt, %error, "retrying the LLM request");
            }
        }
    }
    spoken
}

fn record(turn_id: TurnId, message: ChatMessage, proactive: bool) -> HistoryRecord {
    HistoryRecord {
        turn_id,
        at: Utc::now(),
        message,
        interrupted: false,
        proactive,
    }
}

fn save_transcript(
    character: &Character,
    turn_id: TurnId,
    proactive: bool,
    transcript: &TurnTranscript,
    interrupted: bool,
    reporter: &Reporter,
) {
    let mut records: Vec<HistoryRecord> = transcript
        .messages
        .iter()
        .map(|m| record(turn_id, m.clone(), proactive))
        .collect();
    if !transcript.unfinished_text.trim().is_empty() {
        let mut cut = record(
            turn_id,
            ChatMessage::assistant(&transcript.unfinished_text),
            proactive,
        );
        cut.interrupted = interrupted;
        records.push(cut);
    }
    if let Err(error) = character.append_history(records) {
        reporter.event(history_error(&error));
    }
}

fn history_error(error: &crate::history::HistoryError) -> Event {
    tracing::error!(%error, "history write failed");
    Event::Error {
        code: ErrorCode::History,
        message: error.to_string(),
        // This turn is not stored; the next write starts afresh.
        recoverable: true,
    }
}
