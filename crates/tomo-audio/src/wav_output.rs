//! Writes clips into one WAV file instead of playing them (`tomo talk --out reply.wav`, tests).
//!
//! The file takes the sample rate of the first clip; later clips at another rate are resampled to it,
//! so one voice's output is written untouched. Samples are 16-bit PCM mono, the most widely readable
//! WAV. A file that never received a clip is an empty 22 050 Hz WAV.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::output::{AudioOutput, Clip, OutputError};
use crate::resample::resample;

const EMPTY_FILE_RATE: u32 = 22_050;

type Writer = hound::WavWriter<BufWriter<File>>;

enum State {
    /// Created, waiting for the first clip to fix the sample rate.
    Waiting(File),
    Writing {
        writer: Writer,
        sample_rate: u32,
    },
    Finished,
}

pub struct WavOutput {
    path: PathBuf,
    state: Mutex<State>,
}

impl WavOutput {
    /// Creates (or truncates) `path`. Fails at once when the file cannot be created.
    pub fn create(path: &Path) -> Result<Self, OutputError> {
        let file = File::create(path).map_err(|e| file_error(path, &e.to_string()))?;
        Ok(Self {
            path: path.to_path_buf(),
            state: Mutex::new(State::Waiting(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's sample rate, once the first clip fixed it.
    pub fn sample_rate(&self) -> Option<u32> {
        match &*self.lock() {
            State::Writing { sample_rate, .. } => Some(*sample_rate),
            _ => None,
        }
    }

    /// Finalizes the file (header with the final length). Later clips are rejected.
    pub fn finish(&self) -> Result<(), OutputError> {
        let previous = std::mem::replace(&mut *self.lock(), State::Finished);
        let writer = match previous {
            State::Waiting(file) => self.start(file, EMPTY_FILE_RATE)?,
            State::Writing { writer, .. } => writer,
            State::Finished => return Ok(()),
        };
        writer
            .finalize()
            .map_err(|e| file_error(&self.path, &e.to_string()))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn start(&self, file: File, sample_rate: u32) -> Result<Writer, OutputError> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        hound::WavWriter::new(BufWriter::new(file), spec)
            .map_err(|e| file_error(&self.path, &e.to_string()))
    }

    fn write(&self, clip_samples: &[f32], clip_rate: u32) -> Result<(), OutputError> {
        let mut state = self.lock();
        if let State::Waiting(_) = &*state {
            let State::Waiting(file) = std::mem::replace(&mut *state, State::Finished) else {
                return Ok(());
            };
            let writer = self.start(file, clip_rate)?;
            *state = State::Writing {
                writer,
                sample_rate: clip_rate,
            };
        }
        let State::Writing {
            writer,
            sample_rate,
        } = &mut *state
        else {
            return Err(file_error(&self.path, "the file was already finished"));
        };
        let converted;
        let samples = if clip_rate == *sample_rate {
            clip_samples
        } else {
            converted = resample(clip_samples, clip_rate, *sample_rate)
                .map_err(|e| file_error(&self.path, &e.to_string()))?;
            &converted
        };
        for &sample in samples {
            let value = (sample.clamp(-1.0, 1.0) * f32::from(i16::MAX)).round() as i16;
            writer
                .write_sample(value)
                .map_err(|e| file_error(&self.path, &e.to_string()))?;
        }
        Ok(())
    }
}

fn file_error(path: &Path, message: &str) -> OutputError {
    OutputError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

impl AudioOutput for WavOutput {
    /// Writes the clip at once, calling `on_start` before and `on_finish` after writing it.
    fn play(&self, clip: Clip) -> Result<(), OutputError> {
        if clip.audio.sample_rate == 0 {
            return Err(file_error(&self.path, "clip has a sample rate of 0 Hz"));
        }
        if let Some(on_start) = clip.on_start {
            on_start();
        }
        self.write(&clip.audio.samples, clip.audio.sample_rate)?;
        if let Some(on_finish) = clip.on_finish {
            on_finish();
        }
        Ok(())
    }

    /// Everything is written by the time `play` returns; this flushes it so the file on disk is a
    /// complete, valid WAV (header included) when the future resolves. Writing may go on afterwards.
    fn drained(&self) -> BoxFuture<'static, ()> {
        if let State::Writing { writer, .. } = &mut *self.lock()
            && let Err(error) = writer.flush()
        {
            tracing::error!(path = %self.path.display(), %error, "cannot flush WAV output");
        }
        futures::future::ready(()).boxed()
    }

    /// Nothing is ever pending in a file.
    fn stop(&self) {}
}

impl Drop for WavOutput {
    fn drop(&mut self) {
        if let Err(error) = self.finish() {
            tracing::error!(%error, "cannot finalize WAV output");
        }
    }
}
