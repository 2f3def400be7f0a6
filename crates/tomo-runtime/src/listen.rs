//! The voice front end: microphone (echo-cancelled while the character speaks) → VAD segmenter with the
//! end-of-turn model → `speech_started` ops, and utterances → ASR on its own thread → `speech_ended` ops.
//!
//! While the character speaks the microphone keeps listening (full duplex) unless the session is in
//! half-duplex mode; the user's voice interrupts only once the barge-in gate has heard real words (a
//! cough, a "mm-hm" or the character's own residual echo does not). Recognition starts speculatively at
//! the first pause, and the end-of-turn model is asked once it is done (`recognizing.rs`), so the two do
//! not slow each other down and the transcript is there when the end of the turn is decided: how the
//! pause's words end weighs the model's answer (`turn_words.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tomo_audio::{
    BargeInConfig, BargeInGate, Capture, CaptureConfig, CaptureError, CaptureStatus,
    CaptureStreams, EndOfTurn, ListenMode, MicFrame, RenderReference, Segmenter, SegmenterEvent,
    SileroVad,
};
use tomo_protocol::{Event, Op, SessionState};
use tomo_speech::asr::SpeechToText;

use crate::asr_worker::{AsrJob, AsrJobs, spawn_asr};
use crate::notices::{Notice, Notify};
use crate::voice;

/// Shared switches the front end reads on every frame.
#[derive(Debug, Clone)]
pub struct ListenFlags {
    /// The character is speaking (set from `state_changed` events).
    pub speaking: Arc<AtomicBool>,
    /// The user muted the microphone (set from `mode_changed` events: the session owns the mute state).
    pub muted: Arc<AtomicBool>,
    /// The microphone is ignored while the character speaks (from `mode_changed`; on until the session
    /// says otherwise, so a front end without echo cancellation never hears itself).
    pub half_duplex: Arc<AtomicBool>,
    /// Listen only while push-to-talk is held (from `mode_changed`).
    pub push_to_talk: Arc<AtomicBool>,
    /// Push-to-talk is held right now (from `push_to_talk` events).
    pub ptt_pressed: Arc<AtomicBool>,
}

impl Default for ListenFlags {
    fn default() -> Self {
        Self {
            speaking: Arc::default(),
            muted: Arc::default(),
            half_duplex: Arc::new(AtomicBool::new(true)),
            push_to_talk: Arc::default(),
            ptt_pressed: Arc::default(),
        }
    }
}

impl ListenFlags {
    /// Keeps the switches in step with the session: call it with every session event.
    pub fn follow(&self, event: &Event) {
        match event {
            Event::StateChanged { to, .. } => {
                self.speaking
                    .store(*to == SessionState::Speaking, Ordering::SeqCst);
            }
            Event::ModeChanged {
                mic_muted,
                push_to_talk,
                half_duplex,
                ..
            } => {
                self.muted.store(*mic_muted, Ordering::SeqCst);
                self.push_to_talk.store(*push_to_talk, Ordering::SeqCst);
                self.half_duplex.store(*half_duplex, Ordering::SeqCst);
                if !*push_to_talk {
                    self.ptt_pressed.store(false, Ordering::SeqCst);
                }
            }
            Event::PushToTalk { pressed } => self.ptt_pressed.store(*pressed, Ordering::SeqCst),
            _ => {}
        }
    }

    /// How the segmenter should listen now, and whether push-to-talk is held (in that mode). In
    /// half-duplex mode the microphone is off while the character speaks (it would hear itself) unless
    /// the user deliberately holds push-to-talk, which interrupts the answer.
    pub fn wanted(&self) -> (ListenMode, bool) {
        let ptt = self.push_to_talk.load(Ordering::SeqCst);
        let pressed = ptt && self.ptt_pressed.load(Ordering::SeqCst);
        let deaf = self.speaking.load(Ordering::SeqCst) && self.half_duplex.load(Ordering::SeqCst);
        if self.muted.load(Ordering::SeqCst) || (deaf && !ptt) {
            (ListenMode::Muted, false)
        } else if ptt {
            (ListenMode::PushToTalk, pressed)
        } else {
            (ListenMode::HandsFree, false)
        }
    }
}

/// What the microphone front end is built from.
pub struct Listener {
    pub device: Option<String>,
    pub vad: SileroVad,
    pub asr: Arc<dyn SpeechToText>,
    /// The semantic end-of-turn model; `None`: the fixed hangover ends every utterance.
    pub end_of_turn: Option<Box<dyn EndOfTurn + Send>>,
    /// What the speakers play: with it the microphone is echo-cancelled.
    pub echo_reference: Option<RenderReference>,
    pub barge_in: BargeInConfig,
}

/// Opens the microphone and starts the capture, VAD and ASR threads, which run until the session's op
/// channel closes. Returns the device name.
pub fn start_listening(
    listener: Listener,
    ops: mpsc::Sender<Op>,
    flags: ListenFlags,
    notify: Notify,
) -> Result<String, CaptureError> {
    let (capture, streams) = Capture::spawn(CaptureConfig {
        device: listener.device,
        echo_reference: listener.echo_reference,
        ..CaptureConfig::default()
    })?;
    let name = capture.start()?;
    let asr = spawn_asr(listener.asr, ops.clone(), Arc::clone(&notify));
    let mut segmenter = Segmenter::new(listener.vad, &voice::segmenter_config());
    if let Some(model) = listener.end_of_turn {
        // Asked once the pause's recognition is done: beside it, both would run slower.
        segmenter = segmenter.with_end_of_turn(Box::new(asr.end_of_turn(model)));
    }
    let gate = BargeInGate::new(&listener.barge_in);
    // Named, so a profile of the idle app tells the VAD's thread from the async runtime's.
    thread::Builder::new()
        .name("tomo-listen".into())
        .spawn(move || {
            let _capture = capture; // keep the device open as long as this thread runs
            let mut front = FrontEnd {
                segmenter,
                gate,
                barge_in: listener.barge_in,
                ops,
                flags,
                asr,
                utterance: None,
                was_speaking: false,
                answer_from: Duration::ZERO,
            };
            front.run(&streams, &*notify);
        })
        .map_err(|_| CaptureError::ThreadGone)?;
    Ok(name)
}

/// From asking the session to hold the answer until its echo is surely gone from the microphone
/// (stream time): the op's way to the output, the output's buffer (≈ 90 ms), the room's tail.
const HELD_QUIET: Duration = Duration::from_millis(250);

/// The utterance being heard, and whether the session knows of it yet.
#[derive(Debug, Clone, Copy)]
struct Utterance {
    /// `speech_started` (or `speech_over_answer`) went to the session.
    announced: bool,
    /// It began under the character's voice: only the barge-in gate may announce it (even after the
    /// character stops, its echo tail must not become a turn).
    gated: bool,
    /// For a gated utterance announced: when (stream time) the character is surely quiet.
    quiet_from: Option<Duration>,
    /// Speech was heard after that: the user, not what the canceller left of the character.
    heard_alone: bool,
}

impl Utterance {
    /// Speech over the answer that has not (yet) gone on once the character went quiet.
    fn over_answer_only(&self) -> bool {
        self.gated && !self.heard_alone
    }
}

struct FrontEnd {
    segmenter: Segmenter<SileroVad>,
    gate: BargeInGate,
    barge_in: BargeInConfig,
    ops: mpsc::Sender<Op>,
    flags: ListenFlags,
    asr: AsrJobs,
    utterance: Option<Utterance>,
    was_speaking: bool,
    /// When (stream time) the character last started speaking, for the log.
    answer_from: Duration,
}

impl FrontEnd {
    fn run(&mut self, streams: &CaptureStreams, notify: &(dyn Fn(Notice) + Send + Sync)) {
        loop {
            while let Ok(status) = streams.status.try_recv() {
                match status {
                    CaptureStatus::Lost(why) => notify(Notice::warning(format!(
                        "microphone lost ({why}); retrying"
                    ))),
                    CaptureStatus::Restored(device) => {
                        notify(Notice::info(format!("microphone back: {device}")))
                    }
                    _ => {}
                }
            }
            let Ok(frame) = streams.frames.recv() else {
                return; // capture thread gone
            };
            if self.ops.is_closed() {
                return; // session over
            }
            if let Err(error) = self.frame(&frame) {
                notify(Notice::warning(format!("voice detection failed: {error}")));
            }
        }
    }

    fn frame(&mut self, frame: &MicFrame) -> Result<(), tomo_audio::VadError> {
        let (wanted, pressed) = self.flags.wanted();
        let speaking = self.flags.speaking.load(Ordering::SeqCst);
        let mut events = Vec::new();
        if self.segmenter.mode() != wanted {
            events.extend(self.segmenter.set_mode(wanted));
        }
        if wanted == ListenMode::PushToTalk && pressed != self.segmenter.is_pressed() {
            events.extend(if pressed {
                self.segmenter.press()
            } else {
                self.segmenter.release()
            });
        }
        let voice = frame.voice.as_deref().unwrap_or(&frame.samples);
        // A turn decided on this frame is decided this much later than its audio says (the end-of-turn
        // model runs on it, after waiting for a running recognition).
        let arrived = Instant::now();
        events.extend(self.segmenter.push_heard(&frame.samples, voice)?);
        let position = self.segmenter.position();
        let speech = self.segmenter.last_probability() >= self.barge_in.threshold;
        if let Some(utterance) = self.utterance.as_mut()
            && speech
            && utterance.quiet_from.is_some_and(|quiet| position >= quiet)
        {
            utterance.heard_alone = true;
        }
        if speaking && !self.was_speaking {
            self.gate = BargeInGate::new(&self.barge_in);
            self.answer_from = position;
        }
        self.was_speaking = speaking;
        let gating = speaking || self.utterance.is_some_and(|u| u.gated && !u.announced);
        if gating
            && wanted == ListenMode::HandsFree
            && let Some(held) = self
                .gate
                .push(self.segmenter.last_probability(), frame.echo)
        {
            // What the canceller kept of the deciding frame tells residual echo (far below 0 dB) from
            // the user's voice over it.
            tracing::debug!(
                by = ?held.by,
                echo_kept_db = frame.echo.kept_db,
                echo_path = ?frame.echo.path,
                probability = self.segmenter.last_probability(),
                into_speech_ms = position.saturating_sub(self.answer_from).as_millis() as u64,
                "barge-in: the user talks over the character"
            );
            self.announce();
        }
        let mut events = events.into_iter().peekable();
        while let Some(event) = events.next() {
            // An end without its segment (too short, or the mode changed): said before whatever the
            // same frame starts next (a push-to-talk press).
            if let SegmenterEvent::SpeechEnded { at } = event
                && !matches!(events.peek(), Some(SegmenterEvent::Segment(_)))
            {
                self.ended_without_words(at);
            }
            self.event(event, speaking, arrived);
        }
        Ok(())
    }

    /// The segmenter ended the utterance without a segment (too short to be words): a session that
    /// was told of it learns it said nothing, so it does not wait (a held answer goes on at once).
    /// Through the recognizer's queue, so it comes after the words of earlier utterances.
    fn ended_without_words(&mut self, at: Duration) {
        let Some(utterance) = self.utterance.take().filter(|u| u.announced) else {
            return;
        };
        let job = AsrJob::Final {
            segment: tomo_audio::SpeechSegment {
                samples: Vec::new(),
                start: at,
                end: at,
                speech_end: at,
                ended_by: tomo_audio::TurnEnd::Hangover,
            },
            end_of_turn: Duration::ZERO,
            decided: Instant::now(),
            over_answer_only: utterance.over_answer_only(),
        };
        if self.asr.send(job).is_err() {
            tracing::warn!("speech recognizer gone; the end of an utterance was not told");
        }
    }

    /// Tells the session the user is speaking: it stops whatever the character does, or, for speech
    /// that began under the character's voice, holds the answer until the words decide.
    fn announce(&mut self) {
        let position = self.segmenter.position();
        if let Some(utterance) = self.utterance.as_mut()
            && !utterance.announced
        {
            utterance.announced = true;
            let op = if utterance.gated {
                utterance.quiet_from = Some(position + HELD_QUIET);
                Op::SpeechOverAnswer
            } else {
                Op::SpeechStarted
            };
            let _ = self.ops.blocking_send(op);
        }
    }

    fn event(&mut self, event: SegmenterEvent, speaking: bool, arrived: Instant) {
        match event {
            SegmenterEvent::SpeechStarted { .. } => {
                self.asr.speech_started();
                let gated = speaking && self.segmenter.mode() == ListenMode::HandsFree;
                self.utterance = Some(Utterance {
                    announced: false,
                    gated,
                    quiet_from: None,
                    heard_alone: false,
                });
                // Over the character's voice the barge-in gate decides; otherwise the user wins at once.
                if !gated {
                    self.announce();
                }
            }
            SegmenterEvent::Pause(snapshot) => {
                // Speech over the answer that stopped with it is judged on its final words alone
                // (most of it is the character's own voice).
                if self
                    .utterance
                    .is_some_and(|u| u.announced && !u.over_answer_only())
                {
                    let _ = self.asr.speculate(snapshot);
                }
            }
            SegmenterEvent::Resumed { .. } => {
                // The pause's words are stale: stop recognising them, and the session drops the
                // answer it started for them.
                self.asr.speech_went_on();
                if self.utterance.is_some_and(|u| u.announced) {
                    let _ = self.ops.blocking_send(Op::SpeechResumed);
                }
            }
            SegmenterEvent::Segment(segment) => {
                let Some(utterance) = self.utterance.take().filter(|u| u.announced) else {
                    // Heard only under the character's voice and never enough to count as words.
                    tracing::debug!(
                        "an utterance under the character's voice was not words; dropped"
                    );
                    return;
                };
                // The silence it waited for, and the end-of-turn model's time on this frame (with its wait
                // for a running recognition).
                let end_of_turn = self.segmenter.position().saturating_sub(segment.speech_end)
                    + arrived.elapsed();
                let job = AsrJob::Final {
                    segment,
                    end_of_turn,
                    decided: Instant::now(),
                    over_answer_only: utterance.over_answer_only(),
                };
                if self.asr.send(job).is_err() {
                    tracing::warn!("speech recognizer gone; an utterance was dropped");
                }
            }
            SegmenterEvent::SpeechEnded { .. } => {}
        }
    }
}

/// Default thread count for whisper: every core, up to 4. Recognition runs in the pause after the user's
/// words, when capture and the VAD need little: on the 2-core machine two threads brought the transcript
/// from 891 to 563 ms after the last word (p50, `tomo bench voice --device`), and what the user hears from
/// 1530 to 1250 ms; leaving a core free for capture had been the older choice. `TOMO_ASR_THREADS`
/// overrides it.
pub fn asr_threads() -> usize {
    std::env::var("TOMO_ASR_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(1, 4)
        })
}

#[cfg(test)]
#[path = "listen_tests.rs"]
mod tests;
