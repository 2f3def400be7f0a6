//! Where answers go: the profile's voice on this machine's speakers, or text events only.

use std::sync::Arc;

use anyhow::Context;
use tomo_audio::RodioOutput;
use tomo_config::profile::Profile;
use tomo_core::sink::{OutputSink, TextSink};
use tomo_speech::models::ModelStore;
use tomo_speech::voice_sink::VoiceSink;

use crate::voice;

/// The profile's voice on its output device, `workers` sentences synthesized ahead of playback.
pub fn speaker_sink(
    profile: &Profile,
    store: &ModelStore,
    workers: usize,
) -> anyhow::Result<Arc<dyn OutputSink>> {
    let tts = voice::tts(profile, store)?;
    let output = RodioOutput::open(profile.tts.output_device.as_deref()).context("no speakers")?;
    // A character switch swaps the voice too.
    let sink =
        VoiceSink::new(tts, Arc::new(output), workers).with_voices(voice::voice_builder(store));
    Ok(Arc::new(sink))
}

/// [`speaker_sink`] when the model store, the voice and the speakers are there; otherwise text events only,
/// with the reason, so the front end can tell the user once.
pub fn speaker_sink_or_text(
    profile: &Profile,
    workers: usize,
) -> (Arc<dyn OutputSink>, Option<anyhow::Error>) {
    let voiced = ModelStore::from_env()
        .map_err(anyhow::Error::from)
        .and_then(|store| speaker_sink(profile, &store, workers));
    match voiced {
        Ok(sink) => (sink, None),
        Err(error) => (Arc::new(TextSink), Some(error)),
    }
}
