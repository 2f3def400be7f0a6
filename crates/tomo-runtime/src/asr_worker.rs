//! Speech recognition on its own thread, so capture never waits for ASR. Utterances come in two kinds:
//! a speculative snapshot taken when the speaker paused, and the final segment once the end of the turn
//! is decided. When the final segment holds the same words as the last snapshot (same start, same end of
//! speech, and the speaker did not go on in between), the snapshot's transcript is used and the user waits
//! only for what is left of it. When the speaker goes on after the pause ([`AsrJobs::speech_went_on`]),
//! the snapshot's recognition is not started, or stops at whisper's next check (after the encoder, after
//! each decoder pass), and its words are not offered to the session.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SendError, Sender, channel};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tomo_audio::SpeechSegment;
use tomo_protocol::Op;
use tomo_speech::asr::{AsrError, SpeechToText, Stale};

use crate::notices::{Notice, Notify};
use crate::recognizing::{AfterRecognition, Recognizing};

/// Work for the recognizer.
#[derive(Debug)]
pub enum AsrJob {
    /// The speaker paused: transcribe what was said so far, in case the turn ends here. `went_on_at`:
    /// [`AsrJobs::speech_went_on`]'s count when the pause was heard.
    Speculate {
        snapshot: SpeechSegment,
        went_on_at: u64,
    },
    /// The turn ended `end_of_turn` after the last word, at `decided`: its transcript goes to the session.
    /// `over_answer_only`: speech over the character's answer that stopped when it went quiet.
    Final {
        segment: SpeechSegment,
        end_of_turn: Duration,
        decided: Instant,
        over_answer_only: bool,
    },
}

/// A transcript of a pause snapshot, keyed by what it holds.
struct Speculation {
    start: Duration,
    speech_end: Duration,
    /// [`AsrJobs::speech_went_on`]'s count when the snapshot was taken.
    went_on_at: u64,
    text: Result<String, AsrError>,
}

impl Speculation {
    /// The final segment holds the snapshot's words: the same utterance, ending at the same speech, and
    /// the speaker did not go on since.
    fn matches(&self, segment: &SpeechSegment, went_on: u64) -> bool {
        self.start == segment.start
            && self.speech_end == segment.speech_end
            && self.went_on_at == went_on
    }
}

/// The recognizer thread's inbox.
pub struct AsrJobs {
    jobs: Sender<AsrJob>,
    /// Counts the times the speaker went on after a pause; a snapshot's recognition started at another
    /// count is stale.
    went_on: Arc<AtomicU64>,
    recognizing: Recognizing,
}

impl AsrJobs {
    /// The end-of-turn `model`, asked once the recognition of the pause is done and weighed with its
    /// words.
    pub fn end_of_turn(&self, model: Box<dyn tomo_audio::EndOfTurn + Send>) -> AfterRecognition {
        AfterRecognition::new(
            model,
            self.recognizing.clone(),
            Arc::clone(&self.went_on),
            AfterRecognition::CAP,
        )
    }

    pub fn send(&self, job: AsrJob) -> Result<(), SendError<AsrJob>> {
        self.jobs.send(job)
    }

    /// Offers the pause's `snapshot`, stamped with the count of times the speaker went on so far (read
    /// here, on the thread that counts them, so the worker cannot stamp it late).
    pub fn speculate(&self, snapshot: SpeechSegment) -> Result<(), SendError<AsrJob>> {
        let went_on_at = self.went_on.load(Ordering::SeqCst);
        self.jobs.send(AsrJob::Speculate {
            snapshot,
            went_on_at,
        })
    }

    /// A new utterance began: the words of the last one's pauses are not its.
    pub fn speech_started(&self) {
        self.recognizing.forget_pause();
    }

    /// The speaker went on after the pause: the snapshot being recognised (if any) is stale.
    pub fn speech_went_on(&self) {
        self.went_on.fetch_add(1, Ordering::SeqCst);
    }
}

/// Starts the recognizer thread; it ends when the job sender or the session goes away. No warm-up decode:
/// whisper's state is allocated when the model loads, the first utterance measured as fast as the others
/// on the device benchmark, and a decode at start (≈ 1.6 s of both cores; the older "warm-up" was silence,
/// which returns before decoding) slowed the desktop app's start and profile switches.
pub fn spawn_asr(asr: Arc<dyn SpeechToText>, ops: mpsc::Sender<Op>, notify: Notify) -> AsrJobs {
    let (jobs, rx) = channel();
    let went_on = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&went_on);
    let recognizing = Recognizing::default();
    let running = recognizing.clone();
    let spawned = thread::Builder::new()
        .name("tomo-asr".into())
        .spawn(move || {
            serve(&*asr, &rx, &counter, &running, &ops, &*notify);
        });
    if let Err(error) = spawned {
        // The job sender then reports every utterance as dropped (`listen` logs it).
        tracing::error!(%error, "cannot start the speech recognizer thread");
    }
    AsrJobs {
        jobs,
        went_on,
        recognizing,
    }
}

fn serve(
    asr: &dyn SpeechToText,
    jobs: &Receiver<AsrJob>,
    went_on: &Arc<AtomicU64>,
    recognizing: &Recognizing,
    ops: &mpsc::Sender<Op>,
    notify: &(dyn Fn(Notice) + Send + Sync),
) {
    let mut queue: VecDeque<AsrJob> = VecDeque::new();
    let mut speculation: Option<Speculation> = None;
    loop {
        if queue.is_empty() {
            match jobs.recv() {
                Ok(job) => queue.push_back(job),
                Err(_) => return,
            }
        }
        queue.extend(jobs.try_iter());
        let Some(job) = queue.pop_front() else {
            continue;
        };
        match job {
            AsrJob::Speculate {
                snapshot,
                went_on_at: at,
            } => {
                let counter = Arc::clone(went_on);
                let stale: Stale = Arc::new(move || counter.load(Ordering::SeqCst) != at);
                recognizing.forget_pause();
                // Anything newer already queued, or the speaker already went on: skip it.
                if !queue.is_empty() || stale() {
                    speculation = None;
                    continue;
                }
                let began = Instant::now();
                // Counted as running for the decode only: a guard alive across the sends below would
                // make the end-of-turn model wait on the session too.
                let recognized = {
                    let _running = recognizing.begin();
                    let recognized = asr.transcribe_unless(&snapshot.samples, &stale);
                    // Kept before the guard drops: the end-of-turn model reads them as soon as no
                    // recognition runs.
                    if let Ok(transcript) = &recognized {
                        recognizing.heard_in_pause(at, transcript);
                    }
                    recognized
                };
                let text = match recognized {
                    Err(AsrError::GivenUp) => {
                        tracing::debug!("the speaker went on; the pause's recognition stopped");
                        speculation = None;
                        continue;
                    }
                    other => other.map(|t| t.text),
                };
                tracing::debug!(
                    took_ms = began.elapsed().as_millis() as u64,
                    samples = snapshot.samples.len(),
                    "pause recognised"
                );
                // The session may start the answer for these words while the end of the turn is
                // still being decided (unless newer audio already made them stale). No words are said
                // too: speech over the character's answer that was only a cough lets it go on at once.
                queue.extend(jobs.try_iter());
                if let Ok(words) = &text
                    && queue.is_empty()
                {
                    let op = Op::SpeechPaused {
                        transcript: words.clone(),
                    };
                    if ops.blocking_send(op).is_err() {
                        return;
                    }
                    // The speaker went on while the op was on its way: `listen`'s `speech_resumed` may
                    // have reached the session before it, so say it again after it.
                    if stale() && ops.blocking_send(Op::SpeechResumed).is_err() {
                        return;
                    }
                }
                speculation = Some(Speculation {
                    start: snapshot.start,
                    speech_end: snapshot.speech_end,
                    went_on_at: at,
                    text,
                });
            }
            AsrJob::Final {
                segment,
                end_of_turn,
                decided,
                over_answer_only,
            } => {
                recognizing.forget_pause();
                let now = went_on.load(Ordering::SeqCst);
                let reused = speculation.take().filter(|s| s.matches(&segment, now));
                let text = match reused {
                    Some(spoken) => {
                        tracing::debug!("the transcript of the pause is the turn's");
                        spoken.text
                    }
                    // Too short to hold words (the listener says so): nothing to recognise.
                    None if segment.samples.is_empty() => Ok(String::new()),
                    None => {
                        let _running = recognizing.begin();
                        asr.transcribe(&segment.samples).map(|t| t.text)
                    }
                };
                let transcript = text.unwrap_or_else(|error| {
                    notify(Notice::warning(format!(
                        "speech recognition failed: {error}"
                    )));
                    String::new()
                });
                let op = Op::SpeechEnded {
                    transcript,
                    asr_ms: decided.elapsed().as_millis() as u64,
                    end_of_turn_ms: end_of_turn.as_millis() as u64,
                    over_answer_only,
                };
                if ops.blocking_send(op).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "asr_worker_tests.rs"]
mod tests;
