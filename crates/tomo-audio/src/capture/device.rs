//! The microphone through cpal's default host (ALSA on Linux): device lookup by name, a stream in
//! whatever sample format the device offers, downmixed to mono in the callback.

use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use rodio::cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use rodio::cpal::{self, FromSample, SampleFormat, SizedSample};

use super::{CaptureError, Msg};

/// A started stream and what it delivers.
pub(super) struct Opened {
    pub stream: cpal::Stream,
    pub name: String,
    pub sample_rate: u32,
    pub channels: u16,
}

/// Names of the input devices the audio host offers.
pub fn list_input_devices() -> Vec<String> {
    match cpal::default_host().input_devices() {
        Ok(devices) => devices.filter_map(|d| device_name(&d)).collect(),
        Err(error) => {
            tracing::warn!(%error, "cannot list input devices");
            Vec::new()
        }
    }
}

pub(super) fn no_device_message(wanted: Option<&str>, available: &[String]) -> String {
    let what = match wanted {
        Some(name) => format!("no input device matches \"{name}\""),
        None => "no default input device".to_string(),
    };
    let list = if available.is_empty() {
        "none".to_string()
    } else {
        available.join(", ")
    };
    format!("{what} (available input devices: {list})")
}

fn device_name(device: &cpal::Device) -> Option<String> {
    device.description().ok().map(|d| d.name().to_string())
}

fn find_input_device(wanted: Option<&str>) -> Result<cpal::Device, CaptureError> {
    let host = cpal::default_host();
    let found = match wanted {
        None => host.default_input_device(),
        Some(name) => {
            let needle = name.to_lowercase();
            host.input_devices().ok().and_then(|mut devices| {
                devices.find(|d| device_name(d).is_some_and(|n| n.to_lowercase().contains(&needle)))
            })
        }
    };
    found.ok_or_else(|| CaptureError::NoDevice {
        wanted: wanted.map(str::to_string),
        available: list_input_devices(),
    })
}

/// Opens the input device whose name contains `wanted` (the default: `None`) with a fixed `period` when
/// the device allows one; its samples arrive as `Msg::Samples` of stream `stream_id` on `tx`.
pub(super) fn open(
    wanted: Option<&str>,
    period: Option<Duration>,
    stream_id: u64,
    tx: &Sender<Msg>,
) -> Result<Opened, CaptureError> {
    let device = find_input_device(wanted)?;
    let name = device_name(&device).unwrap_or_else(|| "unnamed device".into());
    let open_failed = |message: String| CaptureError::Open {
        device: name.clone(),
        message,
    };
    let supported = device
        .default_input_config()
        .map_err(|e| open_failed(e.to_string()))?;
    let mut config = supported.config();
    // A short fixed period. PulseAudio's ALSA plugin reports the capture readable as soon as any data
    // arrived; cpal then polls again until a whole period is there — a busy loop that cost 16-23 % of a
    // core while anything played to the same server. With a period that divides what the server hands
    // over at once (10 ms), each wake-up finds whole periods. Measured idle on the 2-core machine
    // (cpal's capture thread, `tomo run`): 20 ms 13 %, 10 ms 6 %, 5 ms 4 %; 3 ms, which does not
    // divide 10, spun at 92 %. Whole process idle: 9.5 % at 10 ms, 7.0 % at 5 ms.
    if let Some(period) = period
        && let cpal::SupportedBufferSize::Range { min, max } = supported.buffer_size()
    {
        let frames = (period.as_secs_f64() * f64::from(config.sample_rate)).round() as u32;
        config.buffer_size = cpal::BufferSize::Fixed(frames.clamp(*min, *max));
    }
    let channels = usize::from(config.channels.max(1));
    let id = stream_id;
    let stream = match supported.sample_format() {
        SampleFormat::F32 => build::<f32>(&device, &config, channels, id, tx),
        SampleFormat::I16 => build::<i16>(&device, &config, channels, id, tx),
        SampleFormat::U16 => build::<u16>(&device, &config, channels, id, tx),
        SampleFormat::I32 => build::<i32>(&device, &config, channels, id, tx),
        SampleFormat::U8 => build::<u8>(&device, &config, channels, id, tx),
        SampleFormat::I8 => build::<i8>(&device, &config, channels, id, tx),
        SampleFormat::F64 => build::<f64>(&device, &config, channels, id, tx),
        other => {
            return Err(CaptureError::UnsupportedFormat {
                device: name,
                format: format!("{other:?}"),
            });
        }
    }
    .map_err(|e| open_failed(e.to_string()))?;
    stream.play().map_err(|e| open_failed(e.to_string()))?;
    Ok(Opened {
        stream,
        name,
        sample_rate: config.sample_rate,
        channels: config.channels,
    })
}

/// Drops a stream, waiting at most a moment: tearing down a stream whose server vanished can block
/// for good inside the ALSA plugin, and that must not hang `stop()`/`shutdown()`.
pub(super) fn release(stream: cpal::Stream) {
    let (done_tx, done) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("tomo-capture-close".into())
        .spawn(move || {
            drop(stream);
            let _ = done_tx.send(());
        });
    if spawned.is_ok() && done.recv_timeout(Duration::from_secs(2)).is_err() {
        tracing::warn!("closing the capture stream is stuck; left to finish in the background");
    }
}

fn build<T>(
    device: &cpal::Device,
    config: &cpal::StreamConfig,
    channels: usize,
    stream: u64,
    tx: &Sender<Msg>,
) -> Result<cpal::Stream, cpal::Error>
where
    T: SizedSample + Send + 'static,
    f32: FromSample<T>,
{
    let rate = config.sample_rate.max(1);
    let data_tx = tx.clone();
    let error_tx = tx.clone();
    device.build_input_stream::<T, _, _>(
        *config,
        move |data: &[T], info: &cpal::InputCallbackInfo| {
            // The first sample was recorded this long before the callback (the device's input latency),
            // or, when the host does not say, one buffer ago.
            let timestamp = info.timestamp();
            let latency = timestamp
                .callback
                .checked_duration_since(timestamp.capture)
                .filter(|latency| !latency.is_zero())
                .unwrap_or_else(|| {
                    Duration::from_secs_f64((data.len() / channels) as f64 / f64::from(rate))
                });
            let now = Instant::now();
            let recorded_at = now.checked_sub(latency).unwrap_or(now);
            // Downmix here: the message is smaller and the worker only ever sees mono.
            let samples: Vec<f32> = if channels == 1 {
                data.iter().map(|s| s.to_sample::<f32>()).collect()
            } else {
                let scale = 1.0 / channels as f32;
                data.chunks_exact(channels)
                    .map(|f| f.iter().map(|s| s.to_sample::<f32>()).sum::<f32>() * scale)
                    .collect()
            };
            let _ = data_tx.send(Msg::Samples {
                stream,
                samples,
                recorded_at,
            });
        },
        move |error| {
            let _ = error_tx.send(Msg::StreamError { stream, error });
        },
        Some(Duration::from_secs(5)),
    )
}
