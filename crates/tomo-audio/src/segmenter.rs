//! Turns a stream of 16 kHz frames into speech segments: VAD smoothing with onset, pre-roll, hangover,
//! minimum length and a forced cut, plus push-to-talk and mute. Pure logic over a [`VoiceActivity`].

use std::collections::VecDeque;
use std::time::Duration;

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
    /// soft syllable does not start the hangover (hysteresis).
    pub release_threshold: f32,
    /// Consecutive speech frames needed before speech starts (rejects clicks).
    pub onset: Duration,
    /// Audio kept before the first speech frame so the first word is not clipped.
    pub pre_roll: Duration,
    /// Silence after the last speech frame that ends a segment.
    pub hangover: Duration,
    /// Silence kept after the last speech frame in the emitted segment.
    pub post_roll: Duration,
    /// Speech (first to last speech frame) shorter than this is discarded as noise.
    pub min_speech: Duration,
    /// A segment is cut (and a new one begins) when it grows this long.
    pub max_segment: Duration,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            release_threshold: 0.35,
            onset: Duration::from_millis(64),
            pre_roll: Duration::from_millis(400),
            hangover: Duration::from_millis(600),
            post_roll: Duration::from_millis(200),
            min_speech: Duration::from_millis(250),
            max_segment: Duration::from_secs(30),
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
}

/// The utterance being collected.
struct Active {
    start_frame: u64,
    first_speech: u64,
    last_speech: u64,
    samples: Vec<f32>,
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
        }
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
            events.push(SegmenterEvent::Segment(segment(active)));
        }
        events
    }

    /// Feeds one frame of exactly [`FRAME_SAMPLES`] 16 kHz samples.
    pub fn push(&mut self, frame: &[f32]) -> Result<Vec<SegmenterEvent>, VadError> {
        if frame.len() != FRAME_SAMPLES {
            return Err(VadError::FrameLength {
                expected: FRAME_SAMPLES,
                got: frame.len(),
            });
        }
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
                let probability = self.vad.speech_probability(frame)?;
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
                    self.finish(active, &mut events);
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
                events.push(SegmenterEvent::SpeechStarted {
                    at: frame_time(active.first_speech),
                });
                self.active = Some(active);
                self.onset_run = 0;
            }
            return;
        };
        active.samples.extend_from_slice(frame);
        if probability >= self.release_threshold {
            active.last_speech = index;
        }
        if index - active.last_speech >= self.hangover_frames {
            if let Some(active) = self.active.take() {
                self.finish(active, events);
            }
            return;
        }
        self.force_cut_if_long(index, events);
    }

    /// Emits the segment so far when it reached the maximum length; the utterance goes on in a new one.
    fn force_cut_if_long(&mut self, index: u64, events: &mut Vec<SegmenterEvent>) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if index + 1 - active.start_frame < self.max_frames {
            return;
        }
        if let Some(full) = self.active.take() {
            events.push(SegmenterEvent::Segment(segment(full)));
        }
        let mut next = self.start_at(index + 1, Vec::new());
        // The speaker is mid-utterance: count the cut as speech so the hangover starts afresh.
        next.last_speech = index;
        self.active = Some(next);
    }

    fn finish(&mut self, mut active: Active, events: &mut Vec<SegmenterEvent>) {
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
            events.push(SegmenterEvent::Segment(segment(active)));
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
            samples,
        }
    }
}

fn segment(active: Active) -> SpeechSegment {
    let start = frame_time(active.start_frame);
    let end = start
        + Duration::from_micros(active.samples.len() as u64 * 1_000_000 / u64::from(SAMPLE_RATE));
    SpeechSegment {
        samples: active.samples,
        start,
        end,
    }
}
