//! Speaker playback through rodio: a strictly ordered clip queue with start/finish callbacks.
//!
//! The device stream lives on its own plain thread (cpal streams are not `Send` on every platform).
//! Each clip is wrapped in a [`TrackedClip`] source that reports, from the audio callback, when its
//! first sample is pulled by the device and when it runs out; the worker turns those into `on_start`
//! and `on_finish` calls on its own thread so user callbacks never run inside the audio callback.
//! With a [`RenderReference`], every clip's samples are also handed to the echo canceller, stamped with
//! when they will be heard (pulled now, heard one device buffer later).

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::channel::oneshot;
use futures::future::BoxFuture;
use rodio::{MixerDeviceSink, Player};

use crate::device_clock::OutputClock;

mod clip;
mod device;
use clip::{ReferenceTap, TrackedClip};
pub use device::list_output_devices;
use device::open_sink;

use crate::echo::RenderReference;
use crate::glitch_log::GlitchLog;
use crate::output::{AudioOutput, Clip, ClipCallback, OutputError};

/// How much longer than its own length a clip may take to play before the device counts as gone. Generous:
/// on a loaded machine a live PulseAudio stream can stall for seconds (seen: 4.7 s on 2 busy cores), and
/// a device that really vanished is mostly reported at once by the backend; this catches the silent rest.
const STALL_MARGIN: Duration = Duration::from_secs(8);
/// After the device is gone, a new clip tries to reopen it at most this often (a dead sound server
/// must not make every sentence wait for a failing open).
const REOPEN_INTERVAL: Duration = Duration::from_secs(2);
/// How long a clip waits for the device to reopen.
const REOPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages to the playback thread: commands from the API and reports from the audio callback.
enum Msg {
    Play {
        id: u64,
        generation: u64,
        clip: Clip,
    },
    Stop,
    /// Hold playback where it is, or go on.
    Pause(bool),
    Shutdown,
    /// The device is gone: open it again (the sound server restarted, the headset is back).
    Reopen {
        reply: mpsc::SyncSender<Result<String, OutputError>>,
    },
    Started {
        id: u64,
        at: Instant,
    },
    Exhausted {
        id: u64,
        at: Instant,
    },
    DeviceError {
        fatal: bool,
        message: String,
    },
}

/// Bookkeeping shared between the API and the playback thread.
#[derive(Default)]
struct QueueState {
    next_id: u64,
    /// Bumped by `stop()`: clips of older generations no longer count as pending.
    generation: u64,
    pending: usize,
    waiters: Vec<oneshot::Sender<()>>,
    dead: Option<String>,
    last_reopen: Option<Instant>,
}

impl QueueState {
    fn wake_if_idle(&mut self) {
        if self.pending == 0 {
            for waiter in self.waiters.drain(..) {
                let _ = waiter.send(());
            }
        }
    }
}

/// Plays clips on an output device (or the system default) through rodio.
pub struct RodioOutput {
    device: String,
    tx: Sender<Msg>,
    state: Arc<Mutex<QueueState>>,
    thread: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<QueueState>) -> MutexGuard<'_, QueueState> {
    // A poisoned lock only means a user callback panicked elsewhere; the counters are still usable.
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RodioOutput {
    /// Opens the output device whose name contains `device_name` (case-insensitive), or the default.
    pub fn open(device_name: Option<&str>) -> Result<Self, OutputError> {
        Self::open_with_reference(device_name, None)
    }

    /// Like [`RodioOutput::open`], and feeds what it plays to `reference` (the echo canceller's).
    pub fn open_with_reference(
        device_name: Option<&str>,
        reference: Option<RenderReference>,
    ) -> Result<Self, OutputError> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let state = Arc::new(Mutex::new(QueueState::default()));
        let wanted = device_name.map(str::to_string);
        let worker_state = Arc::clone(&state);
        let worker_tx = tx.clone();
        let thread = std::thread::Builder::new()
            .name("tomo-playback".into())
            .spawn(move || {
                let opened = open_sink(wanted.as_deref(), worker_tx.clone());
                match opened {
                    Ok((sink, name)) => {
                        let _ = ready_tx.send(Ok(name));
                        Worker::new(sink, wanted, worker_tx, worker_state, reference).run(&rx);
                    }
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                    }
                }
            })
            .map_err(|e| OutputError::Device(format!("cannot start the playback thread: {e}")))?;
        let opened = ready_rx
            .recv()
            .map_err(|_| OutputError::Device("the playback thread stopped while opening".into()))
            .and_then(|result| result);
        let device = match opened {
            Ok(device) => device,
            Err(error) => {
                let _ = thread.join();
                return Err(error);
            }
        };
        tracing::info!(device = %device, "audio output opened");
        Ok(Self {
            device,
            tx,
            state,
            thread: Some(thread),
        })
    }

    /// The name of the device in use.
    pub fn device_name(&self) -> &str {
        &self.device
    }

    /// When the device has gone away, tries (at most every [`REOPEN_INTERVAL`]) to open it again, so
    /// speech comes back by itself once the sound server or the headset is back.
    fn reopen_if_gone(&self) -> Result<(), OutputError> {
        let gone = |reason: &str| {
            OutputError::Device(format!("output device {} is gone: {reason}", self.device))
        };
        let reason = {
            let mut state = lock(&self.state);
            let Some(reason) = state.dead.clone() else {
                return Ok(());
            };
            if state
                .last_reopen
                .is_some_and(|at| at.elapsed() < REOPEN_INTERVAL)
            {
                return Err(gone(&reason));
            }
            state.last_reopen = Some(Instant::now());
            reason
        };
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx
            .send(Msg::Reopen { reply })
            .map_err(|_| OutputError::Device("the playback thread has stopped".into()))?;
        match answer.recv_timeout(REOPEN_TIMEOUT) {
            Ok(Ok(name)) => {
                tracing::info!(device = %name, "audio output reopened");
                Ok(())
            }
            Ok(Err(error)) => Err(gone(&format!("{reason}; reopening failed: {error}"))),
            Err(_) => Err(gone(&format!("{reason}; reopening timed out"))),
        }
    }
}

impl AudioOutput for RodioOutput {
    fn play(&self, mut clip: Clip) -> Result<(), OutputError> {
        if clip.audio.sample_rate == 0 {
            return Err(OutputError::Device("clip has a sample rate of 0 Hz".into()));
        }
        clip.audio = clip::at_queue_rate(clip.audio);
        self.reopen_if_gone()?;
        let mut state = lock(&self.state);
        if let Some(reason) = &state.dead {
            return Err(OutputError::Device(format!(
                "output device {} is gone: {reason}",
                self.device
            )));
        }
        let id = state.next_id;
        state.next_id += 1;
        let generation = state.generation;
        // Sent under the lock so the channel order matches the order of `generation` changes.
        self.tx
            .send(Msg::Play {
                id,
                generation,
                clip,
            })
            .map_err(|_| OutputError::Device("the playback thread has stopped".into()))?;
        state.pending += 1;
        Ok(())
    }

    fn drained(&self) -> BoxFuture<'static, ()> {
        let mut state = lock(&self.state);
        if state.pending == 0 {
            return futures::future::ready(()).boxed();
        }
        let (tx, rx) = oneshot::channel();
        state.waiters.push(tx);
        // A dropped sender (thread gone) also means nothing is left to wait for.
        rx.map(|_| ()).boxed()
    }

    fn stop(&self) {
        let mut state = lock(&self.state);
        state.generation += 1;
        state.pending = 0;
        let _ = self.tx.send(Msg::Stop);
        state.wake_if_idle();
    }

    fn pause(&self, paused: bool) {
        let _ = self.tx.send(Msg::Pause(paused));
    }
}

impl Drop for RodioOutput {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        lock(&self.state).waiters.clear();
    }
}

struct InFlight {
    id: u64,
    generation: u64,
    duration: Duration,
    on_start: Option<ClipCallback>,
    on_finish: Option<ClipCallback>,
    started: Option<Instant>,
    /// Set once the source ran out: when its last sample has left the device.
    finish_at: Option<Instant>,
}

struct Worker {
    sink: MixerDeviceSink,
    /// The device asked for (`None`: the default), to reopen it after it went away.
    wanted: Option<String>,
    player: Player,
    reports: Sender<Msg>,
    state: Arc<Mutex<QueueState>>,
    queue: VecDeque<InFlight>,
    /// Audio handed to the device is heard this much later (its buffer).
    latency: Duration,
    /// Last time the device pulled a clip's first or last sample (or the queue was idle).
    last_progress: Instant,
    glitches: GlitchLog,
    reference: Option<RenderReference>,
    /// The device's pull clock, which stamps what goes to the echo reference.
    clock: OutputClock,
    /// Held since then (`pause`): the player sends silence and pulls nothing from the clips.
    paused_since: Option<Instant>,
}

/// Starts counting the frames `sink` pulls (a silent source in its mixer).
fn start_clock(sink: &MixerDeviceSink) -> OutputClock {
    let config = sink.config();
    let clock = OutputClock::new(config.sample_rate().get());
    sink.mixer().add(clock.source(config.channel_count()));
    clock
}

impl Worker {
    fn new(
        sink: MixerDeviceSink,
        wanted: Option<String>,
        reports: Sender<Msg>,
        state: Arc<Mutex<QueueState>>,
        reference: Option<RenderReference>,
    ) -> Self {
        let config = sink.config();
        let latency = match config.buffer_size() {
            rodio::cpal::BufferSize::Fixed(frames) => {
                Duration::from_secs_f64(f64::from(*frames) / f64::from(config.sample_rate().get()))
            }
            rodio::cpal::BufferSize::Default => Duration::from_millis(50),
        };
        let player = Player::connect_new(sink.mixer());
        let clock = start_clock(&sink);
        Self {
            clock,
            sink,
            wanted,
            player,
            reports,
            state,
            queue: VecDeque::new(),
            latency,
            last_progress: Instant::now(),
            glitches: GlitchLog::new(),
            reference,
            paused_since: None,
        }
    }

    fn run(mut self, rx: &Receiver<Msg>) {
        loop {
            let timeout = self
                .queue
                .front()
                .and_then(|c| c.finish_at)
                .map_or(Duration::from_secs(1), |at| {
                    at.saturating_duration_since(Instant::now())
                });
            match rx.recv_timeout(timeout) {
                Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.finish_due();
            self.check_stall();
        }
        self.player.stop();
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Play {
                id,
                generation,
                clip,
            } => self.enqueue(id, generation, clip),
            Msg::Stop => {
                self.player.stop();
                // A fresh player: the stopped one keeps nothing of the old queue (nor its hold).
                self.player = Player::connect_new(self.sink.mixer());
                self.queue.clear();
                self.paused_since = None;
            }
            Msg::Pause(true) => {
                if self.paused_since.is_none() {
                    self.player.pause();
                    self.paused_since = Some(Instant::now());
                }
            }
            Msg::Pause(false) => self.resume(),
            Msg::Started { id, at } => {
                self.last_progress = Instant::now();
                // `on_start` waits in `finish_due` until the clips before it have finished, so the
                // callbacks stay ordered even though the device pulls the next clip early.
                if let Some(clip) = self.queue.iter_mut().find(|c| c.id == id) {
                    clip.started = Some(at);
                }
            }
            Msg::Exhausted { id, at } => {
                self.last_progress = Instant::now();
                let latency = self.latency;
                if let Some(clip) = self.queue.iter_mut().find(|c| c.id == id) {
                    // The device pulls ahead of what is heard: the clip ends no earlier than its
                    // start plus its length, plus the device buffer.
                    let heard_end = clip.started.unwrap_or(at) + clip.duration;
                    clip.finish_at = Some(heard_end.max(at) + latency);
                }
            }
            Msg::DeviceError { fatal, message } => {
                if fatal {
                    self.device_error(message);
                } else if self.glitches.admit(Instant::now()) {
                    let similar_since_last = self.glitches.take_suppressed();
                    tracing::warn!(error = %message, similar_since_last, "audio output glitch");
                }
            }
            Msg::Reopen { reply } => {
                let _ = reply.send(self.reopen());
            }
            Msg::Shutdown => {}
        }
    }

    /// Goes on after a hold: the clips that had started but were not pulled to the end were held as
    /// long as the hold lasted, so their heard ends move by that much (a clip already pulled to the end
    /// was playing out of the device's buffer and keeps its end).
    fn resume(&mut self) {
        let Some(since) = self.paused_since.take() else {
            return;
        };
        let held = since.elapsed();
        for clip in &mut self.queue {
            if clip.finish_at.is_none()
                && let Some(started) = clip.started.as_mut()
            {
                *started += held;
            }
        }
        self.last_progress = Instant::now();
        self.player.play();
    }

    fn reopen(&mut self) -> Result<String, OutputError> {
        let (sink, name) = open_sink(self.wanted.as_deref(), self.reports.clone())?;
        self.player.stop();
        self.clock = start_clock(&sink);
        self.sink = sink;
        self.player = Player::connect_new(self.sink.mixer());
        self.queue.clear();
        self.last_progress = Instant::now();
        self.paused_since = None;
        lock(&self.state).dead = None;
        Ok(name)
    }

    fn enqueue(&mut self, id: u64, generation: u64, clip: Clip) {
        if generation != lock(&self.state).generation {
            return; // stopped before it reached us
        }
        if self.queue.is_empty() {
            self.last_progress = Instant::now();
        }
        let duration = Duration::from_secs_f64(clip.audio.duration_secs());
        let tap = self
            .reference
            .clone()
            .map(|reference| ReferenceTap::new(reference, self.clock.clone()));
        let source = TrackedClip::new(id, clip.audio, self.reports.clone(), tap);
        self.queue.push_back(InFlight {
            id,
            generation,
            duration,
            on_start: clip.on_start,
            on_finish: clip.on_finish,
            started: None,
            finish_at: None,
        });
        self.player.append(source);
    }

    /// Runs the callbacks that are due, strictly in queue order: the front clip's `on_start` once its
    /// first sample went to the device, its `on_finish` once its audio has been heard.
    fn finish_due(&mut self) {
        let now = Instant::now();
        while let Some(front) = self.queue.front_mut() {
            if front.started.is_some()
                && let Some(on_start) = front.on_start.take()
            {
                on_start();
            }
            if front.finish_at.is_none_or(|at| at > now) {
                break;
            }
            let Some(mut clip) = self.queue.pop_front() else {
                break;
            };
            if let Some(on_start) = clip.on_start.take() {
                on_start(); // never reported (e.g. an empty clip): keep the start-before-finish order
            }
            if let Some(on_finish) = clip.on_finish.take() {
                on_finish();
            }
            let mut state = lock(&self.state);
            if clip.generation == state.generation {
                state.pending = state.pending.saturating_sub(1);
                state.wake_if_idle();
            }
        }
    }

    /// ALSA through PulseAudio reports nothing when the server dies: the device just stops pulling.
    /// Without this, `drained()` would never resolve. The front clip must make progress (start, or
    /// run out) within its own length plus a margin.
    fn check_stall(&mut self) {
        if self.paused_since.is_some() {
            // Held on purpose: nothing is pulled, and that is no sign of a lost device.
            self.last_progress = Instant::now();
            return;
        }
        let Some(front) = self.queue.front() else {
            self.last_progress = Instant::now();
            return;
        };
        if front.finish_at.is_some() {
            return;
        }
        let allowed = front.duration + STALL_MARGIN;
        if self.last_progress.elapsed() > allowed {
            self.device_error(format!(
                "the device stopped taking audio for {:.1} s",
                allowed.as_secs_f32()
            ));
        }
    }

    fn device_error(&mut self, message: String) {
        tracing::error!(error = %message, "audio output device lost");
        self.queue.clear();
        let mut state = lock(&self.state);
        state.dead = Some(message);
        state.generation += 1;
        state.pending = 0;
        state.wake_if_idle();
    }
}
