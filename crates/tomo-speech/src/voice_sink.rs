//! The voice output sink: sentences → TTS workers (synthesize ahead, several at once) → playback strictly
//! in order → `audio_started` / `audio_finished` events → drained.
//!
//! Synthesis of sentence 1 starts the moment it is enqueued, while the LLM is still writing sentence 2.
//! One sequencer task hands finished clips to the [`AudioOutput`] in sentence order, whatever order the
//! workers finish in. An interrupt bumps a generation counter: everything queued before it is dropped,
//! including clips still being synthesized.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use futures::future::BoxFuture;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tomo_audio::Audio;
use tomo_audio::output::{AudioOutput, Clip};
use tomo_config::profile::Profile;
use tomo_core::sink::{OutputSink, Playhead, SinkError, SinkEvents};
use tomo_protocol::{Action, Event, Sentence, TurnId};

use crate::tts::TextToSpeech;

/// Lip-sync frames are 20 ms long.
pub const ENVELOPE_FRAME_MS: u32 = 20;

enum Job {
    Clip {
        generation: u64,
        turn: TurnId,
        index: u32,
        actions: Vec<Action>,
        audio: oneshot::Receiver<Option<Audio>>,
    },
    /// Everything of `turn` before this marker has been queued; answer once it has played.
    EndOfTurn {
        generation: u64,
        done: oneshot::Sender<Result<(), SinkError>>,
    },
}

struct Shared {
    generation: AtomicU64,
    /// Wakes the sequencer when an interrupt happens while it waits for the output to drain.
    interrupted: tokio::sync::Notify,
    events: Mutex<Option<SinkEvents>>,
    /// What is playing: the turn, its first sample's time, the clip on the device, the last finished.
    play: Mutex<PlayState>,
}

/// Playback of the latest turn that played (older turns are over).
#[derive(Debug, Default)]
struct PlayState {
    turn: Option<TurnId>,
    first_audio: Option<Instant>,
    /// (sentence index, when its first sample was pulled, how long it lasts).
    playing: Option<(u32, Instant, std::time::Duration)>,
    finished: Option<u32>,
    /// Held since then (`hold`): the playhead stands still.
    held_since: Option<Instant>,
}

impl Shared {
    fn emit(&self, event: Event) {
        if let Ok(guard) = self.events.lock()
            && let Some(events) = guard.as_ref()
        {
            events.send(event);
        }
    }
}

/// Builds a character's voice when the session switches character (see [`VoiceSink::with_voices`]).
pub type VoiceBuilder =
    Arc<dyn Fn(&Profile) -> Result<Arc<dyn TextToSpeech>, String> + Send + Sync>;

/// A first sentence whose synthesis started before it was enqueued (see [`OutputSink::prepare`]).
struct Prepared {
    turn: TurnId,
    generation: u64,
    text: String,
    audio: oneshot::Receiver<Option<Audio>>,
}

pub struct VoiceSink {
    /// Swapped on a character switch; each sentence takes the voice current when it is enqueued.
    tts: Arc<RwLock<Arc<dyn TextToSpeech>>>,
    prepared: Mutex<Option<Prepared>>,
    voices: Option<VoiceBuilder>,
    output: Arc<dyn AudioOutput>,
    workers: Arc<Semaphore>,
    jobs: mpsc::UnboundedSender<Job>,
    shared: Arc<Shared>,
}

impl VoiceSink {
    /// `workers`: how many sentences may be synthesized at the same time (at least 1).
    /// Must be called inside a tokio runtime (it starts the sequencer task).
    pub fn new(tts: Arc<dyn TextToSpeech>, output: Arc<dyn AudioOutput>, workers: usize) -> Self {
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            interrupted: tokio::sync::Notify::new(),
            events: Mutex::new(None),
            play: Mutex::new(PlayState::default()),
        });
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(sequence(queue, Arc::clone(&output), Arc::clone(&shared)));
        Self {
            tts: Arc::new(RwLock::new(tts)),
            prepared: Mutex::new(None),
            voices: None,
            output,
            workers: Arc::new(Semaphore::new(workers.max(1))),
            jobs,
            shared,
        }
    }

    /// When the first audio sample of `turn` was handed to the device, if it has been (the latest turn
    /// that played only: nothing grows per turn).
    pub fn first_audio_at(&self, turn: TurnId) -> Option<Instant> {
        let play = self.shared.play.lock().ok()?;
        play.first_audio.filter(|_| play.turn == Some(turn))
    }

    /// Lets a character switch change the voice: `build` makes the new character's voice from its profile.
    /// Without it, every character speaks with the voice the sink was made with.
    #[must_use]
    pub fn with_voices(mut self, build: VoiceBuilder) -> Self {
        self.voices = Some(build);
        self
    }

    /// Synthesizes a word in the background, so the first real sentence does not pay for the voice's
    /// first run (ONNX Runtime sets up its kernels then). Must be called inside a tokio runtime.
    pub fn warm_up(&self) {
        let tts = self.current_tts();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            match tts.synthesize("Hello.") {
                Ok(_) => tracing::debug!(took = ?started.elapsed(), "voice warmed up"),
                Err(error) => tracing::debug!(%error, "voice warm-up failed"),
            }
        });
    }

    pub fn tts_name(&self) -> String {
        self.current_tts().name().to_owned()
    }

    /// Synthesizes `text` on a worker (at most `workers` at once); the audio, or `None` if it failed.
    fn synthesize(&self, text: String) -> oneshot::Receiver<Option<Audio>> {
        let (tx, rx) = oneshot::channel();
        let tts = self.current_tts();
        let workers = Arc::clone(&self.workers);
        tokio::spawn(async move {
            let Ok(_permit) = workers.acquire_owned().await else {
                return;
            };
            if tx.is_closed() {
                return; // a prepared guess dropped before its turn came: no one will play it
            }
            let outcome = tokio::task::spawn_blocking(move || tts.synthesize(&text)).await;
            let audio = match outcome {
                Ok(Ok(audio)) => Some(audio),
                Ok(Err(error)) => {
                    tracing::error!(%error, "speech synthesis failed; the sentence stays silent");
                    None
                }
                Err(join) => {
                    tracing::error!(%join, "speech synthesis crashed; the sentence stays silent");
                    None
                }
            };
            let _ = tx.send(audio);
        });
        rx
    }

    /// The prepared synthesis of `text` for `turn`, if that is what was prepared (since the last
    /// interrupt); any other prepared sentence is dropped.
    fn take_prepared(&self, turn: TurnId, text: &str) -> Option<oneshot::Receiver<Option<Audio>>> {
        let prepared = self.prepared.lock().ok()?.take()?;
        let generation = self.shared.generation.load(Ordering::SeqCst);
        let same =
            prepared.turn == turn && prepared.generation == generation && prepared.text == text;
        tracing::debug!(
            used = same,
            "a first sentence was prepared before it was enqueued"
        );
        same.then_some(prepared.audio)
    }

    fn current_tts(&self) -> Arc<dyn TextToSpeech> {
        // A poisoned lock only means a panic elsewhere while swapping; the voice inside is still whole.
        match self.tts.read() {
            Ok(tts) => Arc::clone(&tts),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }
}

impl OutputSink for VoiceSink {
    fn attach(&self, events: SinkEvents) {
        if let Ok(mut slot) = self.shared.events.lock() {
            *slot = Some(events);
        }
    }

    fn enqueue(&self, turn: TurnId, sentence: Sentence) -> Result<(), SinkError> {
        let Some(text) = sentence.tts_text.clone() else {
            return Ok(()); // display-only sentence: nothing to say
        };
        let rx = match self.take_prepared(turn, &text) {
            Some(prepared) => prepared,
            None => self.synthesize(text),
        };
        self.jobs
            .send(Job::Clip {
                generation: self.shared.generation.load(Ordering::SeqCst),
                turn,
                index: sentence.index,
                actions: sentence.actions,
                audio: rx,
            })
            .map_err(|_| SinkError::Unavailable("the voice output has stopped".to_owned()))
    }

    fn prepare(&self, turn: TurnId, tts_text: &str) {
        let audio = self.synthesize(tts_text.to_owned());
        if let Ok(mut slot) = self.prepared.lock() {
            *slot = Some(Prepared {
                turn,
                generation: self.shared.generation.load(Ordering::SeqCst),
                text: tts_text.to_owned(),
                audio,
            });
        }
    }

    fn finish_turn(&self, _turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>> {
        let (done, wait) = oneshot::channel();
        let sent = self.jobs.send(Job::EndOfTurn {
            generation: self.shared.generation.load(Ordering::SeqCst),
            done,
        });
        Box::pin(async move {
            if sent.is_err() {
                return Err(SinkError::Unavailable(
                    "the voice output has stopped".to_owned(),
                ));
            }
            wait.await.unwrap_or(Err(SinkError::Interrupted))
        })
    }

    fn plays_audio(&self) -> bool {
        true
    }

    fn playhead(&self, turn: TurnId) -> Option<Playhead> {
        let Ok(play) = self.shared.play.lock() else {
            return Some(Playhead {
                sentence: 0,
                fraction: 0.0,
            });
        };
        if play.turn != Some(turn) {
            // Nothing of this turn has played yet.
            return Some(Playhead {
                sentence: 0,
                fraction: 0.0,
            });
        }
        Some(match play.playing {
            Some((index, started, duration)) => Playhead {
                sentence: index,
                fraction: if duration.is_zero() {
                    1.0
                } else {
                    let until = play.held_since.unwrap_or_else(Instant::now);
                    let played = until.saturating_duration_since(started);
                    (played.as_secs_f32() / duration.as_secs_f32()).clamp(0.0, 1.0)
                },
            },
            None => Playhead {
                sentence: play.finished.map_or(0, |index| index + 1),
                fraction: 0.0,
            },
        })
    }

    fn interrupt(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut prepared) = self.prepared.lock() {
            prepared.take();
        }
        // Under the lock `hold` takes too: a hold and a stop reach the output in the order they were
        // made, and the sink's idea of the hold matches the output's (a stop ends it).
        match self.shared.play.lock() {
            Ok(mut play) => {
                play.held_since = None;
                self.output.stop();
            }
            Err(_) => self.output.stop(),
        }
        self.shared.interrupted.notify_waiters();
    }

    fn hold(&self, held: bool) {
        let Ok(mut play) = self.shared.play.lock() else {
            return;
        };
        let now = Instant::now();
        match (held, play.held_since) {
            (true, None) => play.held_since = Some(now),
            (false, Some(since)) => {
                play.held_since = None;
                // The clip that was playing went on later by the time it was held.
                if let Some((_, started, _)) = play.playing.as_mut() {
                    *started += now.saturating_duration_since(since);
                }
            }
            _ => return,
        }
        // Under the lock, so a hold and its release reach the output in the order they were made.
        self.output.pause(held);
    }

    fn switch_voice(&self, profile: &Profile) -> BoxFuture<'static, Result<(), SinkError>> {
        let Some(build) = self.voices.clone() else {
            return Box::pin(async { Ok(()) });
        };
        let slot = Arc::clone(&self.tts);
        let profile = profile.clone();
        Box::pin(async move {
            // Loading a neural voice reads a model file: off the async threads.
            let built = tokio::task::spawn_blocking(move || build(&profile))
                .await
                .map_err(|join| SinkError::Voice(format!("loading the voice crashed: {join}")))?;
            let tts = built.map_err(SinkError::Voice)?;
            tracing::info!(voice = tts.name(), "voice switched");
            match slot.write() {
                Ok(mut current) => *current = tts,
                Err(poisoned) => *poisoned.into_inner() = tts,
            }
            Ok(())
        })
    }
}

/// Hands clips to the output in order; answers end-of-turn markers once the output has drained.
async fn sequence(
    mut queue: mpsc::UnboundedReceiver<Job>,
    output: Arc<dyn AudioOutput>,
    shared: Arc<Shared>,
) {
    while let Some(job) = queue.recv().await {
        let current = || shared.generation.load(Ordering::SeqCst);
        match job {
            Job::Clip {
                generation,
                turn,
                index,
                actions,
                audio,
            } => {
                let Ok(Some(audio)) = audio.await else {
                    continue;
                };
                if generation != current() || audio.samples.is_empty() {
                    continue;
                }
                play(&output, &shared, turn, index, actions, audio);
            }
            Job::EndOfTurn { generation, done } => {
                if generation != current() {
                    let _ = done.send(Err(SinkError::Interrupted));
                    continue;
                }
                // Do not rely on the output alone to wake us on an interrupt.
                tokio::select! {
                    () = output.drained() => {}
                    () = shared.interrupted.notified() => {}
                }
                let outcome = if generation == current() {
                    Ok(())
                } else {
                    Err(SinkError::Interrupted)
                };
                let _ = done.send(outcome);
            }
        }
    }
}

fn play(
    output: &Arc<dyn AudioOutput>,
    shared: &Arc<Shared>,
    turn: TurnId,
    index: u32,
    actions: Vec<Action>,
    audio: Audio,
) {
    let envelope = envelope(&audio, ENVELOPE_FRAME_MS);
    let duration_ms = (audio.duration_secs() * 1000.0).round() as u32;
    let clip_duration = std::time::Duration::from_secs_f64(audio.duration_secs().max(0.0));
    let started = Arc::clone(shared);
    let finished = Arc::clone(shared);
    let clip = Clip {
        audio,
        on_start: Some(Box::new(move || {
            if let Ok(mut play) = started.play.lock() {
                let now = Instant::now();
                if play.turn != Some(turn) {
                    *play = PlayState {
                        turn: Some(turn),
                        first_audio: Some(now),
                        // A hold belongs to the output, not to a turn.
                        held_since: play.held_since,
                        ..PlayState::default()
                    };
                }
                // The device can take a clip's first samples just before a hold; it is then heard
                // from the moment the hold ends.
                let from = play.held_since.unwrap_or(now);
                play.playing = Some((index, from, clip_duration));
            }
            started.emit(Event::AudioStarted {
                turn_id: turn,
                sentence_index: index,
                duration_ms,
                frame_ms: ENVELOPE_FRAME_MS,
                envelope,
                actions,
            });
        })),
        on_finish: Some(Box::new(move || {
            if let Ok(mut play) = finished.play.lock()
                && play.turn == Some(turn)
            {
                play.playing = None;
                play.finished = Some(index);
            }
            finished.emit(Event::AudioFinished {
                turn_id: turn,
                sentence_index: index,
            });
        })),
    };
    if let Err(error) = output.play(clip) {
        tracing::error!(%error, "cannot play a sentence");
        shared.emit(Event::Error {
            code: tomo_protocol::ErrorCode::Output,
            message: error.to_string(),
            recoverable: true,
        });
    }
}

/// RMS per `frame_ms` frame, scaled so the loudest frame is 1.0 (all zeros for silence).
pub fn envelope(audio: &Audio, frame_ms: u32) -> Vec<f32> {
    let frame = (audio.sample_rate as usize * frame_ms as usize / 1000).max(1);
    let rms: Vec<f32> = audio
        .samples
        .chunks(frame)
        .map(|chunk| (chunk.iter().map(|s| s * s).sum::<f32>() / chunk.len() as f32).sqrt())
        .collect();
    let peak = rms.iter().copied().fold(0.0_f32, f32::max);
    if peak <= f32::EPSILON {
        return vec![0.0; rms.len()];
    }
    rms.iter().map(|r| (r / peak).clamp(0.0, 1.0)).collect()
}

#[cfg(test)]
#[path = "voice_sink_tests.rs"]
mod tests;
