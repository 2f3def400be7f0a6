//! Microphone capture: a plain thread owns the cpal stream, converts whatever the device delivers
//! (any rate, sample format and channel count) to 16 kHz mono once, and hands out 512-sample frames.
//!
//! Commands carry their own reply channel. The frame queue is bounded: when the consumer lags, the
//! *newest* frame is dropped and counted ([`Capture::dropped_frames`]) — `sync_channel` cannot drop
//! the oldest from the producer side, and blocking would stall the capture thread and overflow the
//! device. A device that disappears while running (a stream error, or no audio for `stall_timeout`:
//! ALSA-over-PulseAudio just goes quiet when the server dies) is reported as [`CaptureStatus::Lost`]
//! and reopened every `retry_interval` until it is back ([`CaptureStatus::Restored`]).
//!
//! With an echo reference ([`CaptureConfig::echo_reference`]), the 16 kHz frames go through the echo
//! canceller here, stamped with the time they were recorded, before anyone (the VAD) sees them.
//!
//! The default microphone is read straight from the sound server when one answers (PulseAudio, or
//! PipeWire's pulse server: [`pulse`]), else through cpal. Device names are those of the default cpal host
//! (ALSA on Linux: "Default Audio Device", "pulse", hardware cards...); a named device always goes through
//! cpal. Under PulseAudio the default records the server's default source, so a specific Pulse source
//! (e.g. `nullsink.monitor`) is chosen with `pactl set-default-source`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rodio::cpal;

use crate::device_clock::StreamClock;
use crate::echo::{BlockLevel, CHUNK, EchoCanceller, EchoConfig, FrameEcho, RenderReference};
use crate::resample::StreamResampler;
use crate::{FRAME_SAMPLES, SAMPLE_RATE};

mod device;
mod pulse;

pub use device::list_input_devices;
use device::{no_device_message, release};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CaptureError {
    #[error("{}", no_device_message(.wanted.as_deref(), .available))]
    NoDevice {
        wanted: Option<String>,
        available: Vec<String>,
    },
    #[error("cannot open input device {device}: {message}")]
    Open { device: String, message: String },
    #[error("input device {device} delivers {format} samples, which are not supported")]
    UnsupportedFormat { device: String, format: String },
    #[error("the capture thread has stopped")]
    ThreadGone,
}

/// What the capture thread reports besides frames.
#[derive(Debug, Clone, PartialEq)]
pub enum CaptureStatus {
    Started {
        device: String,
        sample_rate: u32,
        channels: u16,
    },
    Stopped,
    /// The device failed while running; reopening is retried.
    Lost(String),
    /// The device is back after [`CaptureStatus::Lost`].
    Restored(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CaptureConfig {
    /// Substring of the device name (case-insensitive); `None` for the system default.
    pub device: Option<String>,
    /// Frames (32 ms each) the consumer may lag behind before frames are dropped.
    pub queue_frames: usize,
    /// How often a lost device is reopened.
    pub retry_interval: Duration,
    /// No audio for this long from an open stream counts as a lost device. ALSA through PulseAudio
    /// reports no error when the server goes away, the callbacks just stop; the first callback can
    /// take about a second, so keep this well above that.
    pub stall_timeout: Duration,
    /// The device's period (how much audio each callback brings) through cpal; `None`: the device's
    /// default.
    pub period: Option<Duration>,
    /// Read the default microphone straight from the sound server when one answers (else, and for a
    /// named device, through cpal).
    pub sound_server: bool,
    /// What the speakers play (fed by the playback side): with it, frames are echo-cancelled.
    pub echo_reference: Option<RenderReference>,
    pub echo: EchoConfig,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        Self {
            device: None,
            queue_frames: 64,
            retry_interval: Duration::from_secs(2),
            stall_timeout: Duration::from_secs(3),
            period: Some(Duration::from_millis(5)),
            sound_server: true,
            echo_reference: None,
            echo: EchoConfig::default(),
        }
    }
}

enum Command {
    Start(SyncSender<Result<String, CaptureError>>),
    Stop(SyncSender<()>),
    Shutdown,
}

enum Msg {
    Command(Command),
    /// Mono samples at the device rate from stream number `stream`, the first recorded at `recorded_at`.
    Samples {
        stream: u64,
        samples: Vec<f32>,
        recorded_at: Instant,
    },
    StreamError {
        stream: u64,
        error: cpal::Error,
    },
    /// The sound server's recording of stream number `stream` ended.
    Failed {
        stream: u64,
        message: String,
    },
}

/// Where the open stream's samples come from.
enum Source {
    Device(cpal::Stream),
    SoundServer(pulse::PulseStream),
}

/// Handle to the capture thread. Dropping it shuts the thread down.
pub struct Capture {
    tx: Sender<Msg>,
    dropped: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// A 16 kHz mono microphone frame.
#[derive(Debug, Clone, PartialEq)]
pub struct MicFrame {
    /// [`FRAME_SAMPLES`] samples, echo-cancelled when there is a reference: for detection.
    pub samples: Vec<f32>,
    /// The same frame for recognition when the echo canceller worked on it: the echo subtracted but the
    /// user's voice not suppressed (`None`: `samples` as they are). See `EchoCanceller::take_voice`.
    pub voice: Option<Vec<f32>>,
    /// How much of the microphone's energy the echo canceller let through (`kept_db`: 0 when it passed
    /// the frame untouched; far below 0 when what it heard was the character's own voice), and whether
    /// it judged that the microphone hears the character at all.
    pub echo: FrameEcho,
}

/// Microphone frames, and status events.
pub struct CaptureStreams {
    pub frames: Receiver<MicFrame>,
    pub status: Receiver<CaptureStatus>,
}

impl Capture {
    /// Starts the capture thread (idle until [`Capture::start`]).
    pub fn spawn(config: CaptureConfig) -> Result<(Self, CaptureStreams), CaptureError> {
        let (tx, rx) = mpsc::channel();
        let (frames_tx, frames) = mpsc::sync_channel(config.queue_frames.max(1));
        let (status_tx, status) = mpsc::channel();
        let dropped = Arc::new(AtomicU64::new(0));
        let echo = config
            .echo_reference
            .clone()
            .map(|reference| EchoCanceller::new(reference, &config.echo));
        let mut worker = Worker {
            echo,
            clock: None,
            config,
            tx: tx.clone(),
            frames: frames_tx,
            status: status_tx,
            dropped: Arc::clone(&dropped),
            stream: None,
            current: None,
            stream_id: 0,
            resampler: None,
            pending: Vec::with_capacity(FRAME_SAMPLES * 2),
            cleaned: Vec::with_capacity(FRAME_SAMPLES * 4),
            cleaned_levels: Vec::with_capacity(FRAME_SAMPLES * 4 / CHUNK),
            cleaned_voice: Vec::with_capacity(FRAME_SAMPLES * 4),
            running: false,
            retry_at: None,
            last_audio: Instant::now(),
        };
        let thread = std::thread::Builder::new()
            .name("tomo-capture".into())
            .spawn(move || worker.run(&rx))
            .map_err(|_| CaptureError::ThreadGone)?;
        Ok((
            Self {
                tx,
                dropped,
                thread: Some(thread),
            },
            CaptureStreams { frames, status },
        ))
    }

    /// Opens the device and starts delivering frames. Returns the device name.
    pub fn start(&self) -> Result<String, CaptureError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx
            .send(Msg::Command(Command::Start(reply)))
            .map_err(|_| CaptureError::ThreadGone)?;
        answer.recv().map_err(|_| CaptureError::ThreadGone)?
    }

    /// Closes the device (frames stop; the thread stays up for another `start`).
    pub fn stop(&self) -> Result<(), CaptureError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx
            .send(Msg::Command(Command::Stop(reply)))
            .map_err(|_| CaptureError::ThreadGone)?;
        answer.recv().map_err(|_| CaptureError::ThreadGone)
    }

    /// Frames dropped because the consumer did not keep up.
    pub fn dropped_frames(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn shutdown(mut self) {
        self.shutdown_inner();
    }

    fn shutdown_inner(&mut self) {
        let _ = self.tx.send(Msg::Command(Command::Shutdown));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.shutdown_inner();
    }
}

struct Worker {
    /// Cleans frames of the speakers' echo, when there is a reference.
    echo: Option<EchoCanceller>,
    clock: Option<StreamClock>,
    config: CaptureConfig,
    tx: Sender<Msg>,
    frames: SyncSender<MicFrame>,
    status: Sender<CaptureStatus>,
    dropped: Arc<AtomicU64>,
    stream: Option<Source>,
    /// Name of the open device.
    current: Option<String>,
    /// Increments with every opened stream, so samples from a closed one are ignored.
    stream_id: u64,
    resampler: Option<StreamResampler>,
    pending: Vec<f32>,
    /// Echo-cancelled 16 kHz samples not yet handed on as a whole frame.
    cleaned: Vec<f32>,
    /// The level of each block of [`CHUNK`] samples of `cleaned`.
    cleaned_levels: Vec<BlockLevel>,
    /// The user's voice of `cleaned` (the canceller's linear output).
    cleaned_voice: Vec<f32>,
    running: bool,
    retry_at: Option<Instant>,
    /// When the open stream last delivered samples (or was opened).
    last_audio: Instant,
}

impl Worker {
    fn run(&mut self, rx: &Receiver<Msg>) {
        loop {
            let wake_at = self.retry_at.or_else(|| {
                self.stream
                    .as_ref()
                    .map(|_| self.last_audio + self.config.stall_timeout)
            });
            let msg = match wake_at {
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(msg) => Some(msg),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                None => match rx.recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => return,
                },
            };
            match msg {
                Some(Msg::Command(Command::Start(reply))) => {
                    let _ = reply.send(self.start());
                }
                Some(Msg::Command(Command::Stop(reply))) => {
                    self.stop();
                    let _ = reply.send(());
                }
                Some(Msg::Command(Command::Shutdown)) => {
                    self.stop();
                    return;
                }
                Some(Msg::Samples {
                    stream,
                    samples,
                    recorded_at,
                }) if stream == self.stream_id => {
                    self.deliver(&samples, recorded_at);
                }
                Some(Msg::StreamError { stream, error }) if stream == self.stream_id => {
                    self.stream_error(&error);
                }
                Some(Msg::Failed { stream, message }) if stream == self.stream_id => {
                    self.lost(message);
                }
                Some(Msg::Samples { .. } | Msg::StreamError { .. } | Msg::Failed { .. }) => {}
                None if self.retry_at.is_some() => self.retry(),
                None => self.check_stall(),
            }
        }
    }

    fn start(&mut self) -> Result<String, CaptureError> {
        if self.running
            && let Some(name) = &self.current
        {
            return Ok(name.clone());
        }
        let name = self.open()?;
        self.running = true;
        self.retry_at = None;
        Ok(name)
    }

    fn stop(&mut self) {
        let was = self.running;
        self.running = false;
        self.retry_at = None;
        self.close();
        if was {
            let _ = self.status.send(CaptureStatus::Stopped);
        }
    }

    fn close(&mut self) {
        match self.stream.take() {
            Some(Source::Device(stream)) => release(stream),
            // Stops after its current 10 ms read.
            Some(Source::SoundServer(stream)) => drop(stream),
            None => {}
        }
        self.current = None;
        self.stream_id += 1;
        self.resampler = None;
        self.clock = None;
        self.pending.clear();
        self.cleaned.clear();
        self.cleaned_levels.clear();
        self.cleaned_voice.clear();
    }

    fn open(&mut self) -> Result<String, CaptureError> {
        self.close();
        if self.config.device.is_none() && self.config.sound_server {
            match pulse::open(self.stream_id, &self.tx) {
                Ok(stream) => {
                    return self.opened(
                        Source::SoundServer(stream),
                        pulse::DEVICE_NAME.into(),
                        SAMPLE_RATE,
                        1,
                    );
                }
                Err(reason) => {
                    tracing::debug!(%reason, "no sound server to record from; through the audio device")
                }
            }
        }
        let opened = device::open(
            self.config.device.as_deref(),
            self.config.period,
            self.stream_id,
            &self.tx,
        )?;
        self.opened(
            Source::Device(opened.stream),
            opened.name,
            opened.sample_rate,
            opened.channels,
        )
    }

    /// Takes over a started stream delivering `rate` Hz (downmixed from `channels`).
    fn opened(
        &mut self,
        stream: Source,
        name: String,
        rate: u32,
        channels: u16,
    ) -> Result<String, CaptureError> {
        let resampler =
            StreamResampler::new(rate, SAMPLE_RATE).map_err(|e| CaptureError::Open {
                device: name.clone(),
                message: e.to_string(),
            })?;
        self.resampler = Some(resampler);
        self.stream = Some(stream);
        self.current = Some(name.clone());
        self.last_audio = Instant::now();
        tracing::info!(device = %name, rate, channels, "capture started");
        let _ = self.status.send(CaptureStatus::Started {
            device: name.clone(),
            sample_rate: rate,
            channels,
        });
        Ok(name)
    }

    fn deliver(&mut self, samples: &[f32], recorded_at: Instant) {
        self.last_audio = Instant::now();
        let Some(resampler) = self.resampler.as_mut() else {
            return;
        };
        let rate = resampler.input_rate();
        self.clock
            .get_or_insert_with(|| StreamClock::new(rate))
            .observe(samples.len(), recorded_at);
        match resampler.push(samples) {
            Ok(out) => self.pending.extend(out),
            Err(error) => {
                tracing::error!(%error, "capture resampling failed");
                return;
            }
        }
        let whole = self.pending.len() / FRAME_SAMPLES * FRAME_SAMPLES;
        for frame in self.pending[..whole].chunks_exact(FRAME_SAMPLES) {
            let at = self
                .clock
                .as_mut()
                .filter(|_| self.echo.is_some())
                .and_then(|clock| clock.next_frame(FRAME_SAMPLES));
            match (self.echo.as_mut(), at) {
                (Some(echo), Some(at)) => {
                    self.cleaned.extend(echo.process(frame, at));
                    echo.take_levels(&mut self.cleaned_levels);
                    echo.take_voice(&mut self.cleaned_voice);
                }
                _ => {
                    self.cleaned.extend_from_slice(frame);
                    self.cleaned_voice.extend_from_slice(frame);
                    self.cleaned_levels
                        .extend(frame.chunks(CHUNK).map(BlockLevel::untouched));
                }
            }
        }
        self.pending.drain(..whole);
        // The canceller may hold blocks back while their reference is being played: frames go on whole.
        let ready = self.cleaned.len() / FRAME_SAMPLES * FRAME_SAMPLES;
        let blocks = FRAME_SAMPLES / CHUNK;
        for ((frame, voice), levels) in self.cleaned[..ready]
            .chunks_exact(FRAME_SAMPLES)
            .zip(self.cleaned_voice.chunks_exact(FRAME_SAMPLES))
            .zip(self.cleaned_levels.chunks(blocks))
        {
            let frame = MicFrame {
                samples: frame.to_vec(),
                voice: (voice != frame).then(|| voice.to_vec()),
                echo: FrameEcho::of(levels),
            };
            match self.frames.try_send(frame) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    let total = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                    if total.is_power_of_two() {
                        tracing::warn!(total, "capture consumer lags, frames dropped");
                    }
                }
                Err(TrySendError::Disconnected(_)) => {}
            }
        }
        self.cleaned.drain(..ready);
        self.cleaned_voice.drain(..ready);
        self.cleaned_levels.drain(..ready / CHUNK);
    }

    fn stream_error(&mut self, error: &cpal::Error) {
        use cpal::ErrorKind;
        match error.kind() {
            // Glitches and reroutes: the stream keeps running.
            ErrorKind::Xrun => {
                tracing::debug!(%error, "capture overrun: samples lost");
                if let Some(clock) = self.clock.as_mut() {
                    clock.samples_lost();
                }
            }
            ErrorKind::DeviceChanged | ErrorKind::RealtimeDenied => {
                tracing::debug!(%error, "capture glitch");
            }
            _ => self.lost(error.to_string()),
        }
    }

    fn check_stall(&mut self) {
        if self.stream.is_some() && self.last_audio.elapsed() >= self.config.stall_timeout {
            let device = self.current.clone().unwrap_or_default();
            self.lost(format!(
                "no audio from {device} for {:.1} s",
                self.config.stall_timeout.as_secs_f32()
            ));
        }
    }

    fn lost(&mut self, reason: String) {
        tracing::warn!(%reason, "capture device lost");
        self.close();
        let _ = self.status.send(CaptureStatus::Lost(reason));
        self.retry_at = Some(Instant::now() + self.config.retry_interval);
    }

    fn retry(&mut self) {
        if !self.running {
            self.retry_at = None;
            return;
        }
        match self.open() {
            Ok(name) => {
                self.retry_at = None;
                let _ = self.status.send(CaptureStatus::Restored(name));
            }
            Err(error) => {
                tracing::debug!(%error, "capture device still unavailable");
                self.retry_at = Some(Instant::now() + self.config.retry_interval);
            }
        }
    }
}
