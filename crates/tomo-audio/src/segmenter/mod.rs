//! Turns a stream of 16 kHz frames into speech segments: VAD smoothing with onset, pre-roll, hangover,
//! minimum length and a forced cut, plus push-to-talk and mute. Pure logic over a [`VoiceActivity`] and,
//! when one is given, an [`EndOfTurn`] model: after a short silence the model is asked whether the
//! speaker is done; "done" ends the utterance at once, "not done" waits (asking again) up to a maximum
//! silence. Without a model, or when it fails, the fixed hangover ends the utterance. Inside an utterance
//! a frame far under its words is silence whatever the VAD says (the VAD trails the voice; see
//! `level.rs`).

use std::collections::VecDeque;
use std::time::Duration;

mod level;

pub use level::QUIET_RMS;
use level::{HUSHED_FRAMES_TO_OFFER, Loudness, is_quiet, level_db};

use crate::turn::{EndOfTurn, TurnConfig, TurnEnd};
use crate::vad::{VadError, VoiceActivity};
use crate::{FRAME_SAMPLES, SAMPLE_RATE};

/// How long one frame lasts (32 ms).
pub const FRAME_DURATION: Duration =
    Duration::from_micros(FRAME_SAMPLES as u64 * 1_000_000 / SAMPLE_RATE as u64);

#[derive(Debug, Clone, PartialEq)]
pub struct SegmenterConfig {
    /// Probability at or above which a frame counts as speech while idle.
    pub threshold: f32,
    /// While in speech, frames at or above this (lower) probability still count as speech, so a
    /// soft syllable does not start the hangover (hysteresis), unless they are far under the words
    /// heard so far (hushed: the VAD's trail after the last sound).
    pub release_threshold: f32,
    /// Consecutive speech frames needed before speech starts (rejects clicks).
    pub onset: Duration,
    /// Audio kept before the first speech frame so the first word is not clipped. 300 ms: Silero,
    /// reset to its rested state (`vad.rs`), calls a soft first syllable speech one to four frames
    /// sooner than it did from an all-zero state, and 400 ms then put that much more of the room
    /// before the words, which whisper base heard worse: on the talk-over fixtures (tomo-runtime
    /// tests/talk_over_echo.rs) WER 0.083 / 0.083 / 0.167 at 400 ms, 0.056 / 0.083 / 0.028 at 300
    /// (0.083 / 0.083 / 0.139 at 400 ms with the model's old all-zero reset).
    pub pre_roll: Duration,
    /// Silence after the last speech frame that ends a segment when there is no end-of-turn model.
    pub hangover: Duration,
    /// Silence kept after the last speech frame in the emitted segment.
    pub post_roll: Duration,
    /// Speech (first to last speech frame) shorter than this is discarded as noise.
    pub min_speech: Duration,
    /// A segment is cut (and a new one begins) when it grows this long.
    pub max_segment: Duration,
    /// When to ask the end-of-turn model, if the segmenter has one.
    pub turn: TurnConfig,
    /// Silence after which the utterance so far is offered for speculative recognition
    /// ([`SegmenterEvent::Pause`]), so ASR runs while the end of the turn is still being decided.
    /// `None`: no speculation.
    pub speculate_after: Option<Duration>,
    /// While no utterance is open, frames below [`QUIET_RMS`] (in both the analysed and the kept signal)
    /// count as silence without asking the VAD model (most of what idle listening costs). Off, every
    /// frame goes through the model (a scripted VAD in tests answers one probability per frame).
    pub skip_quiet: bool,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            release_threshold: 0.35,
            onset: Duration::from_millis(64),
            pre_roll: Duration::from_millis(300),
            hangover: Duration::from_millis(600),
            post_roll: Duration::from_millis(200),
            min_speech: Duration::from_millis(250),
            max_segment: Duration::from_secs(30),
            turn: TurnConfig::default(),
            speculate_after: None,
            skip_quiet: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListenMode {
    /// The VAD decides where speech starts and ends.
    #[default]
    HandsFree,
    /// A segment is exactly the audio between [`Segmenter::press`] and [`Segmenter::release`].
    PushToTalk,
    /// Frames are dropped.
    Muted,
}

/// An utterance: 16 kHz mono samples and where they sit in the stream (counted from the first frame).
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechSegment {
    pub samples: Vec<f32>,
    pub start: Duration,
    pub end: Duration,
    /// End of the last speech frame (by the VAD and by level): a [`SegmenterEvent::Pause`] snapshot and
    /// the final segment with the same `start` and `speech_end` hold the same words.
    pub speech_end: Duration,
    /// What ended it.
    pub ended_by: TurnEnd,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SegmenterEvent {
    /// Speech began at `at` (the first speech frame, or the push-to-talk press). For the UI.
    SpeechStarted {
        at: Duration,
    },
    /// Speech ended at `at`. Followed by [`SegmenterEvent::Segment`] unless it was too short or the
    /// mode changed mid-utterance.
    SpeechEnded {
        at: Duration,
    },
    Segment(SpeechSegment),
    /// The speaker paused: the utterance so far (its `ended_by` is [`TurnEnd::Paused`]), for speculative
    /// recognition. If the turn then ends without [`SegmenterEvent::Resumed`], the final segment has the
    /// same words (and the same `start` and `speech_end`).
    Pause(SpeechSegment),
    /// The speaker went on after a [`SegmenterEvent::Pause`] (speech again at `at`): the pause's words
    /// are stale, and work started on them can stop.
    Resumed {
        at: Duration,
    },
}

/// The utterance being collected.
struct Active {
    start_frame: u64,
    first_speech: u64,
    last_speech: u64,
    samples: Vec<f32>,
    /// When the end-of-turn model was last asked during the current pause.
    asked_at: Option<u64>,
    /// The model failed on this utterance: the hangover decides instead.
    model_failed: bool,
    /// A pause snapshot was offered for the current silence.
    offered: bool,
    /// How loud the utterance's speech is (what "hushed" is measured against).
    loudness: Loudness,
    /// The VAD itself heard silence since the last speech frame (not only hushed frames).
    vad_silent: bool,
}

/// The end-of-turn model and its timing, in frames.
struct TurnModel {
    model: Box<dyn EndOfTurn + Send>,
    min_silence: u64,
    max_silence: u64,
    recheck: Option<u64>,
    threshold: f32,
}

pub struct Segmenter<V> {
    vad: V,
    mode: ListenMode,
    threshold: f32,
    release_threshold: f32,
    onset_frames: u64,
    pre_roll_frames: usize,
    hangover_frames: u64,
    post_roll_frames: u64,
    min_speech_frames: u64,
    max_frames: u64,
    /// Frames seen so far (in every mode): the clock for segment times.
    frame_index: u64,
    /// The last frames while idle: pre-roll plus the onset frames.
    ring: VecDeque<Vec<f32>>,
    onset_run: u64,
    active: Option<Active>,
    ptt_pressed: bool,
    turn_config: TurnConfig,
    turn: Option<TurnModel>,
    speculate_frames: Option<u64>,
    skip_quiet: bool,
    /// Frames were skipped since the model last ran.
    skipped: bool,
    /// The speech probability of the last hands-free frame (for a barge-in gate).
    last_probability: f32,
}

fn frames_for(duration: Duration) -> u64 {
    let frame = FRAME_DURATION.as_micros();
    duration.as_micros().div_ceil(frame) as u64
}

fn frame_time(index: u64) -> Duration {
    Duration::from_micros(index * FRAME_SAMPLES as u64 * 1_000_000 / u64::from(SAMPLE_RATE))
}

impl<V: VoiceActivity> Segmenter<V> {
    pub fn new(vad: V, config: &SegmenterConfig) -> Self {
        let onset_frames = frames_for(config.onset).max(1);
        let pre_roll_frames = frames_for(config.pre_roll) as usize;
        Self {
            vad,
            mode: ListenMode::HandsFree,
            threshold: config.threshold,
            release_threshold: config.release_threshold.min(config.threshold),
            onset_frames,
            pre_roll_frames,
            hangover_frames: frames_for(config.hangover).max(1),
            post_roll_frames: frames_for(config.post_roll),
            min_speech_frames: frames_for(config.min_speech),
            max_frames: frames_for(config.max_segment).max(1),
            frame_index: 0,
            ring: VecDeque::with_capacity(pre_roll_frames + onset_frames as usize),
            onset_run: 0,
            active: None,
            ptt_pressed: false,
            turn_config: config.turn.clone(),
            turn: None,
            speculate_frames: config.speculate_after.map(|d| frames_for(d).max(1)),
            skip_quiet: config.skip_quiet,
            skipped: false,
            last_probability: 0.0,
        }
    }

    /// The VAD's speech probability of the last frame pushed in hands-free mode (0 otherwise).
    pub fn last_probability(&self) -> f32 {
        self.last_probability
    }

    /// Lets `model` decide the end of each hands-free utterance (see [`TurnConfig`]).
    pub fn with_end_of_turn(mut self, model: Box<dyn EndOfTurn + Send>) -> Self {
        let config = &self.turn_config;
        let min_silence = frames_for(config.min_silence).max(1);
        self.turn = Some(TurnModel {
            model,
            min_silence,
            max_silence: frames_for(config.max_silence).max(min_silence),
            recheck: config.recheck.map(|d| frames_for(d).max(1)),
            threshold: config.threshold,
        });
        self
    }

    /// Whether an end-of-turn model decides (else the fixed hangover does).
    pub fn has_end_of_turn(&self) -> bool {
        self.turn.is_some()
    }

    pub fn mode(&self) -> ListenMode {
        self.mode
    }

    /// Time of the next frame, i.e. how much audio has been pushed.
    pub fn position(&self) -> Duration {
        frame_time(self.frame_index)
    }

    /// Switches mode. An utterance in progress is dropped (with `SpeechEnded`): muting or switching to
    /// push-to-talk mid-sentence means the user did not want it heard.
    pub fn set_mode(&mut self, mode: ListenMode) -> Vec<SegmenterEvent> {
        let mut events = Vec::new();
        if mode == self.mode {
            return events;
        }
        if self.active.take().is_some() {
            events.push(SegmenterEvent::SpeechEnded {
                at: self.position(),
            });
        }
        self.mode = mode;
        self.ptt_pressed = false;
        self.ring.clear();
        self.onset_run = 0;
        self.vad.reset();
        events
    }

    /// Whether push-to-talk is held (always false outside that mode).
    pub fn is_pressed(&self) -> bool {
        self.ptt_pressed
    }

    /// Push-to-talk pressed: the segment starts with the next frame. Ignored in other modes.
    pub fn press(&mut self) -> Vec<SegmenterEvent> {
        if self.mode != ListenMode::PushToTalk || self.ptt_pressed {
            return Vec::new();
        }
        self.ptt_pressed = true;
        self.active = Some(self.start_at(self.frame_index, Vec::new()));
        vec![SegmenterEvent::SpeechStarted {
            at: self.position(),
        }]
    }

    /// Push-to-talk released: the audio since the press is a segment (if any frame came in).
    pub fn release(&mut self) -> Vec<SegmenterEvent> {
        if self.mode != ListenMode::PushToTalk || !self.ptt_pressed {
            return Vec::new();
        }
        self.ptt_pressed = false;
        let mut events = vec![SegmenterEvent::SpeechEnded {
            at: self.position(),
        }];
        if let Some(active) = self.active.take()
            && !active.samples.is_empty()
        {
            events.push(SegmenterEvent::Segment(segment(active, TurnEnd::Released)));
        }
        events
    }

    /// Feeds one frame of exactly [`FRAME_SAMPLES`] 16 kHz samples.
    pub fn push(&mut self, frame: &[f32]) -> Result<Vec<SegmenterEvent>, VadError> {
        self.push_heard(frame, frame)
    }

    /// Feeds one frame whose speech is detected in `analysed` while the utterances keep `kept` (both
    /// [`FRAME_SAMPLES`] long): with echo cancellation, the suppressed output for detection and the
    /// linear one, where the user's words are whole, for recognition.
    pub fn push_heard(
        &mut self,
        analysed: &[f32],
        kept: &[f32],
    ) -> Result<Vec<SegmenterEvent>, VadError> {
        for frame in [analysed, kept] {
            if frame.len() != FRAME_SAMPLES {
                return Err(VadError::FrameLength {
                    expected: FRAME_SAMPLES,
                    got: frame.len(),
                });
            }
        }
        let frame = kept;
        let index = self.frame_index;
        let mut events = Vec::new();
        match self.mode {
            ListenMode::Muted => {}
            ListenMode::PushToTalk => {
                if let Some(active) = self.active.as_mut() {
                    active.samples.extend_from_slice(frame);
                    active.last_speech = index;
                }
                self.force_cut_if_long(index, &mut events);
            }
            ListenMode::HandsFree => {
                // Nothing below the quiet level is speech, so while no utterance is open the model is
                // not asked: it is most of what idle listening costs. Inside an utterance every frame
                // is asked, so the end of the turn is timed as before. Quiet means both signals: while
                // the character speaks the echo suppressor takes most frames of its voice under the
                // quiet level, and resetting the model on each of them left it starting afresh at the
                // user's first syllables (words over an answer in the near room's echo fixture: p90 of
                // the hold 524 ms after their onset, 385 ms now; tomo-runtime examples/talk_over_timing);
                // the linear output keeps the residual echo above it.
                let skip = self.skip_quiet
                    && self.active.is_none()
                    && is_quiet(analysed)
                    && is_quiet(kept);
                let probability = if skip {
                    self.skipped = true;
                    0.0
                } else {
                    // The model's recurrent state is from before the skipped silence (maybe the end
                    // of the last utterance): start it afresh, as after silence.
                    if std::mem::take(&mut self.skipped) {
                        self.vad.reset();
                    }
                    self.vad.speech_probability(analysed)?
                };
                self.last_probability = probability;
                self.hands_free(index, frame, probability, &mut events);
            }
        }
        self.frame_index += 1;
        Ok(events)
    }

    /// End of stream: an utterance in progress is finished as if the hangover had elapsed.
    pub fn flush(&mut self) -> Vec<SegmenterEvent> {
        let mut events = Vec::new();
        match self.mode {
            ListenMode::PushToTalk => events = self.release(),
            ListenMode::HandsFree => {
                if let Some(active) = self.active.take() {
                    self.finish(active, TurnEnd::Flushed, &mut events);
                }
            }
            ListenMode::Muted => {}
        }
        events
    }

    fn hands_free(
        &mut self,
        index: u64,
        frame: &[f32],
        probability: f32,
        events: &mut Vec<SegmenterEvent>,
    ) {
        let Some(active) = self.active.as_mut() else {
            self.ring.push_back(frame.to_vec());
            while self.ring.len() > self.pre_roll_frames + self.onset_frames as usize {
                self.ring.pop_front();
            }
            if probability >= self.threshold {
                self.onset_run += 1;
            } else {
                self.onset_run = 0;
            }
            if self.onset_run >= self.onset_frames {
                let start_frame = index + 1 - self.ring.len() as u64;
                let samples: Vec<f32> = self.ring.drain(..).flatten().collect();
                let mut active = self.start_at(start_frame, samples);
                active.first_speech = index + 1 - self.onset_frames;
                active.last_speech = index;
                // The onset frames are speech; the pre-roll before them may hold a knock.
                let onset = self.onset_frames as usize;
                for frame in active.samples.rchunks_exact(FRAME_SAMPLES).take(onset) {
                    active.loudness.heard(level_db(frame));
                }
                events.push(SegmenterEvent::SpeechStarted {
                    at: frame_time(active.first_speech),
                });
                self.active = Some(active);
                self.onset_run = 0;
            }
            return;
        };
        active.samples.extend_from_slice(frame);
        if probability < self.release_threshold {
            active.vad_silent = true;
        } else {
            // Frames the VAD calls speech are speech unless far under the words heard so far.
            let level = level_db(frame);
            if !active.loudness.hushes(level) {
                active.loudness.heard(level);
                active.last_speech = index;
                active.vad_silent = false;
                active.asked_at = None;
                if active.offered {
                    active.offered = false;
                    events.push(SegmenterEvent::Resumed {
                        at: frame_time(index),
                    });
                }
            }
        }
        let silence = index - active.last_speech;
        if let Some(after) = self.speculate_frames
            && !active.offered
            && silence >= after
            && (active.vad_silent || silence >= HUSHED_FRAMES_TO_OFFER)
            && active.last_speech + 1 - active.first_speech >= self.min_speech_frames
        {
            active.offered = true;
            events.push(SegmenterEvent::Pause(snapshot(active)));
        }
        if let Some(reason) = self.turn_ended(index) {
            if let Some(active) = self.active.take() {
                self.finish(active, reason, events);
            }
            return;
        }
        self.force_cut_if_long(index, events);
    }

    /// Whether the silence so far ends the utterance, asking the end-of-turn model when it is due.
    fn turn_ended(&mut self, index: u64) -> Option<TurnEnd> {
        let active = self.active.as_mut()?;
        let silence = index - active.last_speech;
        let Some(turn) = self.turn.as_mut().filter(|_| !active.model_failed) else {
            return (silence >= self.hangover_frames).then_some(TurnEnd::Hangover);
        };
        if silence >= turn.max_silence {
            return Some(TurnEnd::MaxSilence);
        }
        let due = match (active.asked_at, turn.recheck) {
            _ if silence < turn.min_silence => false,
            (None, _) => true,
            (Some(asked), Some(every)) => index - asked >= every,
            (Some(_), None) => false,
        };
        if !due {
            return None;
        }
        active.asked_at = Some(index);
        let asked = std::time::Instant::now();
        match turn.model.probability_done(&active.samples) {
            Ok(probability) => {
                tracing::debug!(
                    probability,
                    silence_frames = silence,
                    took_ms = asked.elapsed().as_millis() as u64,
                    "end of turn asked"
                );
                (probability >= turn.threshold).then_some(TurnEnd::ModelDone { probability })
            }
            Err(error) => {
                tracing::warn!(%error, "end-of-turn model failed; the fixed hangover decides");
                active.model_failed = true;
                (silence >= self.hangover_frames).then_some(TurnEnd::Hangover)
            }
        }
    }

    /// Emits the segment so far when it reached the maximum length; the utterance goes on in a new one.
    fn force_cut_if_long(&mut self, index: u64, events: &mut Vec<SegmenterEvent>) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if index + 1 - active.start_frame < self.max_frames {
            return;
        }
        let mut next = self.start_at(index + 1, Vec::new());
        if let Some(full) = self.active.take() {
            next.loudness = full.loudness;
            events.push(SegmenterEvent::Segment(segment(full, TurnEnd::MaxLength)));
        }
        // The speaker is mid-utterance: count the cut as speech so the hangover starts afresh.
        next.last_speech = index;
        self.active = Some(next);
    }

    fn finish(&mut self, mut active: Active, reason: TurnEnd, events: &mut Vec<SegmenterEvent>) {
        let speech_end = active.last_speech + 1;
        events.push(SegmenterEvent::SpeechEnded {
            at: frame_time(speech_end),
        });
        let collected_end = active.start_frame + (active.samples.len() / FRAME_SAMPLES) as u64;
        let end_frame = (speech_end + self.post_roll_frames).min(collected_end);
        let keep = (end_frame - active.start_frame) as usize * FRAME_SAMPLES;
        // The silence after the segment is the pre-roll of whatever comes next.
        let tail: Vec<f32> = active.samples.split_off(keep.min(active.samples.len()));
        self.ring.clear();
        for frame in tail
            .chunks_exact(FRAME_SAMPLES)
            .rev()
            .take(self.pre_roll_frames)
        {
            self.ring.push_front(frame.to_vec());
        }
        self.onset_run = 0;
        if speech_end - active.first_speech >= self.min_speech_frames && !active.samples.is_empty()
        {
            events.push(SegmenterEvent::Segment(segment(active, reason)));
        } else {
            tracing::debug!(
                frames = speech_end - active.first_speech,
                "speech burst too short, discarded"
            );
        }
    }

    fn start_at(&self, start_frame: u64, samples: Vec<f32>) -> Active {
        Active {
            start_frame,
            first_speech: start_frame,
            last_speech: start_frame,
            asked_at: None,
            model_failed: false,
            offered: false,
            loudness: Loudness::default(),
            vad_silent: false,
            samples,
        }
    }
}

fn segment(active: Active, ended_by: TurnEnd) -> SpeechSegment {
    let start = frame_time(active.start_frame);
    let end = start
        + Duration::from_micros(active.samples.len() as u64 * 1_000_000 / u64::from(SAMPLE_RATE));
    SpeechSegment {
        samples: active.samples,
        start,
        end,
        speech_end: frame_time(active.last_speech + 1),
        ended_by,
    }
}

/// The utterance so far, as the final segment would hold it if the turn ended now (the same post-roll).
fn snapshot(active: &Active) -> SpeechSegment {
    let start = frame_time(active.start_frame);
    let keep = active.samples.len();
    SpeechSegment {
        samples: active.samples[..keep].to_vec(),
        start,
        end: start + Duration::from_micros(keep as u64 * 1_000_000 / u64::from(SAMPLE_RATE)),
        speech_end: frame_time(active.last_speech + 1),
        ended_by: TurnEnd::Paused,
    }
}
