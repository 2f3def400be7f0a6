//! Running the Debian speech tools (espeak-ng, flite) and decoding the WAV audio engines produce.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use tomo_audio::Audio;

use super::TtsError;

/// Runs `binary` with `args`, feeding `stdin` from a separate thread so a large input cannot deadlock
/// against a full stdout pipe. A missing binary is [`TtsError::VoiceMissing`] naming it and its package.
pub(crate) fn run(
    binary: &Path,
    package: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<Output, TtsError> {
    let shown = binary.display();
    let mut child = Command::new(binary)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                TtsError::VoiceMissing(format!("{shown} (install the Debian package `{package}`)"))
            }
            _ => TtsError::Failed(format!("cannot start {shown}: {e}")),
        })?;
    let output = std::thread::scope(|scope| {
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            scope.spawn(move || {
                // A write error means the tool exited early; its status and stderr say why.
                let _ = pipe.write_all(text.as_bytes());
            });
        }
        child.wait_with_output()
    })
    .map_err(|e| TtsError::Failed(format!("{shown}: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(TtsError::Failed(format!(
            "{shown} exited with {}: {}",
            output.status,
            stderr.trim()
        )));
    }
    Ok(output)
}

/// Decodes a WAV file to mono `[-1, 1]` samples (channels are averaged).
pub(crate) fn read_wav_file(path: &Path) -> Result<Audio, TtsError> {
    let file = std::fs::File::open(path)
        .map_err(|e| TtsError::Failed(format!("cannot open {}: {e}", path.display())))?;
    decode_wav(std::io::BufReader::new(file), &path.display().to_string())
}

/// Decodes WAV bytes from `reader`; `what` names the source in errors.
pub(crate) fn decode_wav(reader: impl Read, what: &str) -> Result<Audio, TtsError> {
    let bad = |e: hound::Error| TtsError::Failed(format!("{what} is not a readable WAV: {e}"));
    let mut wav = hound::WavReader::new(reader).map_err(bad)?;
    let spec = wav.spec();
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => wav
            .samples::<f32>()
            .collect::<Result<_, _>>()
            .map_err(bad)?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1_i64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            wav.samples::<i32>()
                .map(|s| s.map(|s| s as f32 * scale))
                .collect::<Result<_, _>>()
                .map_err(bad)?
        }
    };
    Ok(Audio::new(
        downmix(&interleaved, spec.channels),
        spec.sample_rate,
    ))
}

/// Averages interleaved channels into one.
pub(crate) fn downmix(interleaved: &[f32], channels: u16) -> Vec<f32> {
    let channels = usize::from(channels.max(1));
    if channels == 1 {
        return interleaved.to_vec();
    }
    interleaved
        .chunks_exact(channels)
        .map(|frame| frame.iter().sum::<f32>() / channels as f32)
        .collect()
}

/// Little-endian signed 16-bit PCM to `[-1, 1]` samples.
pub(crate) fn pcm16_to_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect()
}

/// Appends `next` to `into`, which must be empty or at the same sample rate.
pub(crate) fn append(into: &mut Audio, next: Audio) -> Result<(), TtsError> {
    if into.samples.is_empty() && into.sample_rate == 0 {
        *into = next;
        return Ok(());
    }
    if next.sample_rate != into.sample_rate && !next.samples.is_empty() {
        return Err(TtsError::Failed(format!(
            "audio pieces have different sample rates ({} Hz and {} Hz)",
            into.sample_rate, next.sample_rate
        )));
    }
    into.samples.extend(next.samples);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_16_bit_stereo_to_mono() {
        let mut bytes = std::io::Cursor::new(Vec::new());
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 8000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut writer = hound::WavWriter::new(&mut bytes, spec).unwrap();
        for (l, r) in [(16384_i16, 0_i16), (-32768, -32768)] {
            writer.write_sample(l).unwrap();
            writer.write_sample(r).unwrap();
        }
        writer.finalize().unwrap();
        let audio = decode_wav(std::io::Cursor::new(bytes.into_inner()), "test").unwrap();
        assert_eq!(audio.sample_rate, 8000);
        assert_eq!(audio.samples, [0.25, -1.0]);
    }

    #[test]
    fn garbage_is_an_error_naming_the_source() {
        let err = decode_wav(&b"not a wav"[..], "reply from x").unwrap_err();
        assert!(err.to_string().contains("reply from x"), "{err}");
    }

    #[test]
    fn missing_binary_names_it_and_its_package() {
        let err = run(Path::new("/nonexistent/espeak-ng"), "espeak-ng", &[], None).unwrap_err();
        assert!(matches!(err, TtsError::VoiceMissing(_)), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/espeak-ng"), "{err}");
    }
}
