//! The default microphone read straight from the sound server (PulseAudio, or PipeWire's pulse server)
//! with its "simple" API: the server resamples to 16 kHz mono and hands over one VAD frame (32 ms) at a
//! time, so the reading thread wakes about 31 times a second and does nothing else.
//!
//! Why not cpal's ALSA host for the default device: ALSA's pulse plugin reports the capture readable as
//! soon as any data arrived and cpal polls again until a whole period is there, so the period had to be
//! 5 ms (200 wake-ups a second; 4.4 % of a core for cpal's thread and 1.6 % for the plugin's main loop
//! while nobody spoke). cpal's own PulseAudio host (0.18) kept one thread at 30-40 % of a core.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use libpulse_binding::def::BufferAttr;
use libpulse_binding::sample::{Format, Spec};
use libpulse_binding::stream::Direction;
use libpulse_simple_binding::Simple;

use super::Msg;
use crate::{FRAME_SAMPLES, SAMPLE_RATE};

/// How much audio each read brings, in 16 kHz samples: one VAD frame. The stream's fragments line up with
/// the VAD's frames (both count from the stream's first sample), so a frame is whole the moment its
/// fragment arrives and nothing waits on a longer read. Against 10 ms fragments (`tomo bench voice
/// --device`, alternating runs of 12 turns): the same latency (p50 1000/990 ms against 1010/960), and
/// idle listening 1.9/2.5 % of one core against 3.2/4.1 % (`scripts/bench-idle-cpu.sh`), since every
/// wake-up also wakes the server and the client library's own thread.
const FRAGMENT_SAMPLES: usize = FRAME_SAMPLES;
/// [`FRAGMENT_SAMPLES`] as a duration.
const FRAGMENT: Duration =
    Duration::from_micros(FRAGMENT_SAMPLES as u64 * 1_000_000 / SAMPLE_RATE as u64);
/// The name the server shows for the stream (pavucontrol's Recording tab).
const STREAM_NAME: &str = "Tomo microphone";
/// How long opening may take before the server counts as not answering.
const OPEN_TIMEOUT: Duration = Duration::from_secs(3);

/// The name capture reports for the sound server's default source.
pub(super) const DEVICE_NAME: &str = "sound server default source";

/// A record stream read on its own thread. Dropping it stops the thread after its current read (a
/// fragment); the thread is not waited for, so a server that hangs cannot hang capture.
pub(super) struct PulseStream {
    stop: Arc<AtomicBool>,
}

impl Drop for PulseStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Opens the server's default source at 16 kHz mono; its samples arrive as `Msg::Samples` of stream
/// `stream` on `tx`, a failure as `Msg::Failed`. `Err` says why there is no server to read from.
pub(super) fn open(stream: u64, tx: &Sender<Msg>) -> Result<PulseStream, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let (opened_tx, opened) = mpsc::sync_channel(1);
    let (thread_stop, samples_tx) = (Arc::clone(&stop), tx.clone());
    std::thread::Builder::new()
        .name("tomo-capture-pulse".into())
        .spawn(move || match connect() {
            Ok(simple) => {
                let _ = opened_tx.send(Ok(()));
                read_until_stopped(&simple, stream, &samples_tx, &thread_stop);
            }
            Err(error) => {
                let _ = opened_tx.send(Err(error));
            }
        })
        .map_err(|e| format!("cannot start the capture thread: {e}"))?;
    match opened.recv_timeout(OPEN_TIMEOUT) {
        Ok(Ok(())) => Ok(PulseStream { stop }),
        Ok(Err(error)) => Err(error),
        Err(_) => {
            stop.store(true, Ordering::Relaxed);
            Err(format!(
                "the sound server did not answer within {} s",
                OPEN_TIMEOUT.as_secs()
            ))
        }
    }
}

fn connect() -> Result<Simple, String> {
    let spec = Spec {
        format: Format::FLOAT32NE,
        channels: 1,
        rate: SAMPLE_RATE,
    };
    // u32::MAX: the server's choice, as the API documents it.
    let attr = BufferAttr {
        maxlength: u32::MAX,
        tlength: u32::MAX,
        prebuf: u32::MAX,
        minreq: u32::MAX,
        fragsize: (FRAGMENT_SAMPLES * 4) as u32,
    };
    Simple::new(
        None,
        "Tomo",
        Direction::Record,
        None,
        STREAM_NAME,
        &spec,
        None,
        Some(&attr),
    )
    .map_err(|e| format!("{e}"))
}

fn read_until_stopped(simple: &Simple, stream: u64, tx: &Sender<Msg>, stop: &AtomicBool) {
    let mut bytes = vec![0_u8; FRAGMENT_SAMPLES * 4];
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = simple.read(&mut bytes) {
            let _ = tx.send(Msg::Failed {
                stream,
                message: format!("the sound server stopped the recording: {e}"),
            });
            return;
        }
        let now = Instant::now();
        // The server's record latency is how long ago the oldest sample still unread was recorded; the
        // fragment just read came right before it.
        let latency = simple
            .get_latency()
            .map_or(Duration::ZERO, |usec| Duration::from_micros(usec.0));
        let recorded_at = now.checked_sub(latency + FRAGMENT).unwrap_or(now);
        let samples = bytes
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if tx
            .send(Msg::Samples {
                stream,
                samples,
                recorded_at,
            })
            .is_err()
        {
            return;
        }
    }
}
