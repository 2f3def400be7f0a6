//! Device clocks for the echo canceller: when each captured sample was recorded, and when each sample
//! for the speakers was pulled, on one steady time line.
//!
//! A callback's own timestamp is a poor clock: through PulseAudio's ALSA plugin, buffers come and go in
//! bursts and "now" (minus the reported latency) wanders by 60-80 ms from one callback to the next. Used
//! as is, the capture stream would jump back and forth against the reference, every answer would start
//! at another offset, and the canceller would lose its adapted filter each time. Sample counts are a
//! steady clock, and a callback is never *early* for its samples: so a stream's origin is the earliest
//! `observed − samples before it` over the last few seconds. That ignores jitter, follows the device
//! clock's drift, and moves on (within the window) after the device really dropped samples.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::SAMPLE_RATE;

/// How long an early observation keeps the estimate: long enough to span the bursts' jitter many times
/// over, short enough that a loss at start-up is followed before the first answer (through PulseAudio
/// the capture lost ≈ 130 ms about a second after it opened; with a 3 s window the origin moved in
/// the middle of the first answer, and the character heard itself).
const WINDOW: Duration = Duration::from_secs(1);

/// When the origin moves later, it moves to the earliest delivery of this last stretch, in one step:
/// the window's older deliveries come from while the samples were being lost, and following them one by
/// one moved the capture against its echo reference four times in 130 ms.
const SETTLED: Duration = Duration::from_millis(250);

/// A later origin than the one held is taken only when the whole window says so by more than this:
/// the earliest delivery of one window differs from the next by the bursts' jitter (a few ms), and a
/// held origin that moves with it would move every answer against its echo. A device that really
/// dropped samples shifts by more.
const SLIP: Duration = Duration::from_millis(30);

/// A delivery this much later than its sample count says is no jitter (the bursts are tens of ms apart):
/// the device lost that much time, and what came before it no longer describes the stream. Seen at
/// start-up: the output stream pulled its first two buffers, then nothing for 1.9 s while the models
/// loaded; waiting out the window left the first answer's echo reference 1.9 s off, and the character
/// heard itself and stopped.
const STALL: Duration = Duration::from_millis(250);

/// How a stream's deliveries relate to its samples' times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    /// The device pulls when it needs samples: a pull [`STALL`] late is time it played without ours,
    /// followed at once.
    Output,
    /// A late delivery may be queued audio, not lost audio (a sound server hands over in bursts): only
    /// a lateness that lasts the whole window is followed, or at once when the device reports an
    /// overrun. (Holding the origin through a lasting lateness was tried: through PulseAudio, which
    /// drops what a slow reader does not take without telling it, the echo then never lined up with
    /// its reference again and `tomo bench voice --device --barge-in` completed 0 of 10 turns.)
    Capture,
}

/// The earliest origin implied by recent (position, instant) observations of one stream.
#[derive(Debug)]
struct EarliestOrigin {
    rate: u32,
    kind: StreamKind,
    held: Option<Instant>,
    /// Candidate origins of the recent observations, increasing (a later observation whose candidate is
    /// earlier makes the older ones useless): the front is the earliest of the window.
    candidates: VecDeque<(u64, Instant)>,
}

impl EarliestOrigin {
    fn new(rate: u32, kind: StreamKind) -> Self {
        Self {
            rate: rate.max(1),
            kind,
            held: None,
            candidates: VecDeque::new(),
        }
    }

    /// Sample `position` of the stream (at its own rate) was observed at `at`.
    fn observe(&mut self, position: u64, at: Instant) {
        let before = Duration::from_secs_f64(position as f64 / f64::from(self.rate));
        let candidate = at.checked_sub(before).unwrap_or(at);
        if self.kind == StreamKind::Output && self.held.is_some_and(|held| candidate > held + STALL)
        {
            self.candidates.clear();
        }
        while self.candidates.back().is_some_and(|&(_, c)| c >= candidate) {
            self.candidates.pop_back();
        }
        self.candidates.push_back((position, candidate));
        let window = (WINDOW.as_secs_f64() * f64::from(self.rate)) as u64;
        while self
            .candidates
            .front()
            .is_some_and(|&(p, _)| p + window < position)
        {
            self.candidates.pop_front();
        }
        let Some(&(_, earliest)) = self.candidates.front() else {
            return;
        };
        self.held = match self.held {
            Some(held) if earliest <= held => Some(earliest),
            Some(held) if earliest - held <= SLIP => Some(held),
            Some(held) => {
                let settled = (SETTLED.as_secs_f64() * f64::from(self.rate)) as u64;
                let since = position.saturating_sub(settled);
                while self.candidates.len() > 1
                    && self.candidates.front().is_some_and(|&(p, _)| p < since)
                {
                    self.candidates.pop_front();
                }
                let origin = self.candidates.front().map_or(earliest, |&(_, c)| c);
                tracing::debug!(
                    rate = self.rate,
                    position,
                    slip_ms = (origin - held).as_millis() as u64,
                    "device clock slipped (samples lost); re-anchored"
                );
                Some(origin)
            }
            None => Some(earliest),
        };
    }

    fn origin(&self) -> Option<Instant> {
        self.held
    }

    /// Forgets the origin: the stream lost samples.
    fn restart(&mut self) {
        self.held = None;
        self.candidates.clear();
    }
}

/// Where an open input stream's audio sits in time.
#[derive(Debug)]
pub(crate) struct StreamClock {
    origin: EarliestOrigin,
    input_samples: u64,
    /// 16 kHz samples handed on so far.
    output_samples: u64,
}

impl StreamClock {
    pub(crate) fn new(rate: u32) -> Self {
        Self {
            origin: EarliestOrigin::new(rate, StreamKind::Capture),
            input_samples: 0,
            output_samples: 0,
        }
    }

    /// A callback brought `samples` device-rate samples, the first recorded at `recorded_at`.
    pub(crate) fn observe(&mut self, samples: usize, recorded_at: Instant) {
        self.origin.observe(self.input_samples, recorded_at);
        self.input_samples += samples as u64;
    }

    /// The device reported an overrun: samples were lost, and the origin is found afresh from the next
    /// delivery on.
    pub(crate) fn samples_lost(&mut self) {
        self.origin.restart();
    }

    /// When the next 16 kHz sample to hand on was recorded; counts `len` samples as handed on.
    pub(crate) fn next_frame(&mut self, len: usize) -> Option<Instant> {
        let start = self.origin.origin()?;
        let at =
            start + Duration::from_secs_f64(self.output_samples as f64 / f64::from(SAMPLE_RATE));
        self.output_samples += len as u64;
        Some(at)
    }
}

/// When the output device pulled a frame: on the steady clock, and as the frame's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pull {
    pub(crate) at: Instant,
    /// Device frames pulled before it since the stream opened (silence included).
    pub(crate) frame: u64,
    /// The device's frame rate.
    pub(crate) rate: u32,
    /// Which opening of the device counted `frame` (a reopened device counts from 0 again).
    pub(crate) stream: u64,
}

/// Numbers each [`OutputClock`], so frames of a reopened device are not counted on from the old one's.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(0);

/// Frames between two observations of the output clock (~5 ms at 48 kHz).
const OUTPUT_MARK: u64 = 256;

/// The output device's clock: frames the device has pulled, counted by a silent source that always
/// plays in the mixer, and when they were pulled. A clip's samples are stamped with the clock's time
/// for the frame being pulled, so every answer lands on the same time line (a steady offset from
/// when it is heard, which the canceller's delay estimator finds once and keeps).
#[derive(Debug, Clone)]
pub(crate) struct OutputClock {
    shared: Arc<OutputShared>,
}

#[derive(Debug)]
struct OutputShared {
    rate: u32,
    stream: u64,
    frames: AtomicU64,
    origin: Mutex<EarliestOrigin>,
}

impl OutputClock {
    pub(crate) fn new(rate: u32) -> Self {
        Self {
            shared: Arc::new(OutputShared {
                rate: rate.max(1),
                stream: NEXT_STREAM.fetch_add(1, Ordering::Relaxed),
                frames: AtomicU64::new(0),
                origin: Mutex::new(EarliestOrigin::new(rate, StreamKind::Output)),
            }),
        }
    }

    /// The silent source to add to the device's mixer (it never ends).
    pub(crate) fn source(&self, channels: rodio::ChannelCount) -> ClockSource {
        ClockSource {
            shared: self.shared.clone(),
            channels,
            in_frame: 0,
        }
    }

    /// When the frame the device is pulling now was pulled, on the steady clock (before the device
    /// pulled anything: now), and which frame it is (frames since the stream opened, silence included:
    /// a count that does not wander with the clock's origin).
    pub(crate) fn pull_now(&self) -> Pull {
        let frames = self.shared.frames.load(Ordering::Relaxed);
        let origin = self
            .shared
            .origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .origin();
        let at = match origin {
            Some(origin) => {
                origin + Duration::from_secs_f64(frames as f64 / f64::from(self.shared.rate))
            }
            None => Instant::now(),
        };
        Pull {
            at,
            frame: frames,
            rate: self.shared.rate,
            stream: self.shared.stream,
        }
    }

    #[cfg(test)]
    fn pulled(&self, frames: u64, at: Instant) {
        self.shared.frames.store(frames, Ordering::Relaxed);
        self.shared
            .origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(frames, at);
    }
}

/// Silence, at the mixer's format, counting the frames the device pulls.
pub(crate) struct ClockSource {
    shared: Arc<OutputShared>,
    channels: rodio::ChannelCount,
    in_frame: u16,
}

impl Iterator for ClockSource {
    type Item = rodio::Sample;

    fn next(&mut self) -> Option<Self::Item> {
        self.in_frame += 1;
        if self.in_frame >= self.channels.get() {
            self.in_frame = 0;
            let frame = self.shared.frames.fetch_add(1, Ordering::Relaxed);
            if frame.is_multiple_of(OUTPUT_MARK) {
                self.shared
                    .origin
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .observe(frame, Instant::now());
            }
        }
        Some(0.0)
    }
}

impl rodio::Source for ClockSource {
    fn current_span_len(&self) -> Option<usize> {
        None
    }
    fn channels(&self) -> rodio::ChannelCount {
        self.channels
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        rodio::SampleRate::new(self.shared.rate).unwrap_or(rodio::SampleRate::MIN)
    }
    fn total_duration(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 48_000;
    /// 10 ms callbacks at 48 kHz.
    const PERIOD: usize = 480;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// Callbacks every 10 ms of audio, each delivered `late(i)` after its audio was recorded.
    fn run(
        clock: &mut StreamClock,
        t0: Instant,
        from: usize,
        count: usize,
        late: impl Fn(usize) -> u64,
    ) {
        for i in from..from + count {
            let recorded = t0 + ms(10 * i as u64);
            clock.observe(PERIOD, recorded + ms(late(i)));
        }
    }

    fn offset(at: Instant, truth: Instant) -> i64 {
        if at >= truth {
            (at - truth).as_millis() as i64
        } else {
            -((truth - at).as_millis() as i64)
        }
    }

    #[test]
    fn jittered_callbacks_give_a_steady_clock_at_the_earliest_delivery() {
        let t0 = Instant::now();
        let mut clock = StreamClock::new(RATE);
        // Bursts: a callback is 0-80 ms late, in a pattern.
        run(&mut clock, t0, 0, 300, |i| [0, 80, 60, 20, 75, 5][i % 6]);
        // 3 s of 16 kHz audio handed on in 20 ms frames: each frame's time is exact, whatever the jitter.
        for frame in 0..150u64 {
            let at = clock.next_frame(320).unwrap();
            assert_eq!(offset(at, t0 + ms(20 * frame)), 0, "frame {frame}");
        }
    }

    #[test]
    fn a_loss_is_followed_in_one_step() {
        let t0 = Instant::now();
        let mut clock = StreamClock::new(RATE);
        run(&mut clock, t0, 0, 100, |_| 3);
        // 130 ms lost over 130 ms (each callback a little later than the last), then steady again.
        let mut origins = vec![3];
        for i in 100..400usize {
            run(&mut clock, t0, i, 1, |i| {
                3 + (10 * (i as u64 - 100)).min(130)
            });
            let at = offset(clock.next_frame(0).unwrap(), t0);
            if origins.last() != Some(&at) {
                origins.push(at);
            }
        }
        assert_eq!(origins.first(), Some(&3));
        assert_eq!(origins.last(), Some(&133));
        assert!(origins.len() <= 2, "moved in steps: {origins:?}");
    }

    #[test]
    fn capture_that_lost_samples_is_followed_once_the_device_says_so() {
        let t0 = Instant::now();
        let mut clock = StreamClock::new(RATE);
        run(&mut clock, t0, 0, 100, |_| 3);
        // 200 ms of audio lost in an overrun: the samples now arrive 200 ms later than their count says.
        clock.samples_lost();
        run(&mut clock, t0 + ms(200), 100, 50, |i| [10, 3][i % 2]);
        assert_eq!(offset(clock.next_frame(0).unwrap(), t0), 203);
    }

    #[test]
    fn an_output_that_fell_behind_is_followed_within_the_window() {
        let t0 = Instant::now();
        let clock = OutputClock::new(RATE);
        let truth = |frames: u64| t0 + Duration::from_secs_f64(frames as f64 / f64::from(RATE));
        pulls(&clock, t0, 0, 100, |_| 3);
        // An underrun of 200 ms: what is pulled now sounds 200 ms later than the count says.
        pulls(&clock, t0 + ms(200), 100, 50, |_| 3);
        assert_eq!(
            offset(clock.pull_now().at, truth(149 * 480)),
            3,
            "one late stretch is taken for jitter"
        );
        pulls(&clock, t0 + ms(200), 150, 400, |_| 3);
        assert_eq!(
            offset(clock.pull_now().at, truth(549 * 480)),
            203,
            "after the window, the loss is followed"
        );
    }

    /// Pulls of 480 frames every 10 ms from `first`, each `late(i)` ms after the steady line from `t0`.
    fn pulls(clock: &OutputClock, t0: Instant, first: u64, count: u64, late: impl Fn(u64) -> u64) {
        for i in first..first + count {
            clock.pulled(i * PERIOD as u64, t0 + ms(10 * i + late(i)));
        }
    }

    #[test]
    fn an_output_that_stalled_is_followed_at_once() {
        let t0 = Instant::now();
        let clock = OutputClock::new(RATE);
        pulls(&clock, t0, 0, 2, |_| 3);
        // Nothing pulled for 1.9 s, then steady pulls again, a little jittered: what the device plays
        // now sounds 1.9 s later than the count says, from the first pull after the stall on.
        pulls(&clock, t0 + ms(1_900), 2, 3, |i| {
            [40, 10, 25][i as usize % 3]
        });
        let truth = |frames: u64| t0 + Duration::from_secs_f64(frames as f64 / f64::from(RATE));
        assert_eq!(offset(clock.pull_now().at, truth(4 * 480)), 1_910);
        pulls(&clock, t0 + ms(1_900), 5, 10, |i| [20, 5][i as usize % 2]);
        assert_eq!(
            offset(clock.pull_now().at, truth(14 * 480)),
            1_905,
            "the earliest pull since the stall"
        );
    }

    #[test]
    fn capture_that_falls_behind_is_followed_within_the_window() {
        let t0 = Instant::now();
        let mut clock = StreamClock::new(RATE);
        run(&mut clock, t0, 0, 100, |_| 3);
        // 300 ms of audio lost (a stall much longer than the bursts, no overrun reported): the samples
        // now arrive 300 ms later than their count says.
        run(&mut clock, t0 + ms(300), 100, 50, |_| 3);
        assert_eq!(
            offset(clock.next_frame(0).unwrap(), t0),
            3,
            "one late stretch is taken for queued audio"
        );
        run(&mut clock, t0 + ms(300), 150, 400, |_| 3);
        assert_eq!(
            offset(clock.next_frame(0).unwrap(), t0),
            303,
            "after the window, the loss is followed"
        );
    }

    #[test]
    fn the_output_clock_stamps_bursty_pulls_on_one_steady_line() {
        let t0 = Instant::now();
        let clock = OutputClock::new(RATE);
        // The device pulls 4096-frame bursts, each a varying time ahead of need: the frames of every
        // burst come out of one steady line, at the earliest delivery.
        for burst in 0..60u64 {
            let ahead = [0, 30, 12, 25][burst as usize % 4];
            let first = burst * 4096;
            let need = t0 + Duration::from_secs_f64(first as f64 / f64::from(RATE));
            clock.pulled(first, need + ms(40) - ms(ahead));
        }
        let now = clock.pull_now().at;
        let truth =
            t0 + Duration::from_secs_f64((59 * 4096) as f64 / f64::from(RATE)) + ms(40) - ms(30);
        assert_eq!(offset(now, truth), 0);
    }

    #[test]
    fn a_later_earliest_delivery_within_the_jitter_keeps_the_origin() {
        let t0 = Instant::now();
        let mut clock = StreamClock::new(RATE);
        run(&mut clock, t0, 0, 100, |i| if i == 50 { 0 } else { 12 });
        // 5 s on, the window no longer holds the 0 ms delivery: its earliest is 12 ms late, within the
        // jitter, so the origin stays where it was.
        run(&mut clock, t0, 100, 500, |_| 12);
        assert_eq!(offset(clock.next_frame(0).unwrap(), t0), 0);
    }

    #[test]
    fn no_callback_no_time() {
        let mut clock = StreamClock::new(RATE);
        assert!(clock.next_frame(320).is_none());
    }
}
