//! Finding and opening the output device: by name or the default, with a short stream buffer.

use std::sync::mpsc::Sender;

use rodio::cpal::traits::{DeviceTrait, HostTrait};
use rodio::{DeviceSinkBuilder, MixerDeviceSink};

use super::Msg;
use crate::output::OutputError;

/// Names of the output devices the audio host offers.
pub fn list_output_devices() -> Vec<String> {
    let host = rodio::cpal::default_host();
    match host.output_devices() {
        Ok(devices) => devices.filter_map(|d| device_name(&d)).collect(),
        Err(error) => {
            tracing::warn!(%error, "cannot list output devices");
            Vec::new()
        }
    }
}

fn device_name(device: &rodio::cpal::Device) -> Option<String> {
    device.description().ok().map(|d| d.name().to_string())
}

fn find_output_device(name: Option<&str>) -> Result<rodio::cpal::Device, OutputError> {
    let host = rodio::cpal::default_host();
    let Some(wanted) = name else {
        return host.default_output_device().ok_or_else(|| {
            OutputError::NoDevice(format!(
                "no default output device (available: {})",
                list_output_devices().join(", ")
            ))
        });
    };
    let needle = wanted.to_lowercase();
    let devices = host
        .output_devices()
        .map_err(|e| OutputError::Device(format!("cannot list output devices: {e}")))?;
    for device in devices {
        if device_name(&device).is_some_and(|n| n.to_lowercase().contains(&needle)) {
            return Ok(device);
        }
    }
    Err(OutputError::NoDevice(format!(
        "no output device matches \"{wanted}\" (available: {})",
        list_output_devices().join(", ")
    )))
}

pub(super) fn open_sink(
    name: Option<&str>,
    reports: Sender<Msg>,
) -> Result<(MixerDeviceSink, String), OutputError> {
    let device = find_output_device(name)?;
    let label = device_name(&device).unwrap_or_else(|| "unnamed device".into());
    let on_error = move |error: rodio::cpal::Error| {
        use rodio::cpal::ErrorKind;
        // Only a vanished device is fatal at once. Backend errors (ALSA EIO) also show up as
        // transient glitches on a loaded PulseAudio; if the device really died it stops pulling audio
        // and `check_stall` declares it gone.
        let fatal = matches!(
            error.kind(),
            ErrorKind::DeviceNotAvailable
                | ErrorKind::HostUnavailable
                | ErrorKind::StreamInvalidated
        );
        let _ = reports.send(Msg::DeviceError {
            fatal,
            message: error.to_string(),
        });
    };
    let rate = device.default_output_config().map(|c| c.sample_rate()).ok();
    let mut builder = DeviceSinkBuilder::from_device(device)
        .map_err(|e| OutputError::Device(format!("{label}: {e}")))?
        .with_error_callback(on_error);
    if let Some(rate) = rate {
        builder = builder.with_buffer_size(rodio::cpal::BufferSize::Fixed(period_frames(rate)));
    }
    let mut sink = builder
        .open_sink_or_fallback()
        .map_err(|e| OutputError::Device(format!("cannot open {label}: {e}")))?;
    sink.log_on_drop(false);
    Ok((sink, label))
}

/// The output stream's buffer in frames at `rate`: the largest power of two within 25 ms (1024 at 44.1
/// and 48 kHz), half of rodio's 50 ms. What the speakers play comes that much sooner after it is queued:
/// alternating device benchmarks, the answer heard 40-50 ms sooner (p50 1010/1040 against 1060/1080 ms,
/// output + capture "rest" 107 against 135 ms). The stream runs while nobody talks, so idle listening
/// costs more: 3.1-5.4 % of one core (mean 4.0, four runs) against 1.9-2.3 % (`scripts/bench-idle-cpu.sh`).
/// An 8 s tone played whole beside three busy processes at both sizes; 512 frames underran before.
fn buffer_frames(rate: u32) -> u32 {
    let within = (rate / 40).max(1);
    1 << (31 - within.leading_zeros())
}

/// The period cpal asks ALSA for (the buffer is two of them). Debug builds (the tests' `tomo serve`)
/// take 4096 frames, ~93 ms: with rodio's 2048, headless Chromium drawing the character beside the
/// debug server sent ALSA's PulseAudio plugin into bursts of 1 800 to 25 000 underruns (three of six
/// UI test runs; once over a minute, which timed out the CI run waiting for the voice to end); with
/// 4096, at most one underrun in each of seven runs. Optimizing the callback's code (tomo-audio,
/// rubato) alone did not stop them.
fn period_frames(rate: u32) -> u32 {
    if cfg!(debug_assertions) {
        return 4096;
    }
    buffer_frames(rate)
}

#[cfg(test)]
mod tests {
    use super::buffer_frames;

    #[test]
    fn the_buffer_is_the_largest_power_of_two_within_25_ms() {
        assert_eq!(buffer_frames(44_100), 1024);
        assert_eq!(buffer_frames(48_000), 1024);
        assert_eq!(buffer_frames(16_000), 256);
        assert_eq!(buffer_frames(96_000), 2048);
    }
}
