//! WAV decoding of every supported format, bad files, and the real Silero VAD on real (synthesized)
//! speech.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use tomo_audio::{
    FRAME_SAMPLES, SegmenterConfig, SileroVad, VadError, VoiceActivity, WavError, read_wav_16k,
    read_wav_mono, segments_from_wav,
};

fn write_stereo(path: &Path, spec: hound::WavSpec, seconds: f32) {
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    let frames = (spec.sample_rate as f32 * seconds) as usize;
    for i in 0..frames {
        let v =
            (2.0 * std::f32::consts::PI * 440.0 * i as f32 / spec.sample_rate as f32).sin() * 0.5;
        for _ in 0..spec.channels {
            match spec.sample_format {
                hound::SampleFormat::Float => writer.write_sample(v).unwrap(),
                hound::SampleFormat::Int => {
                    let max = ((1_i64 << (spec.bits_per_sample - 1)) - 1) as f32;
                    writer.write_sample((v * max) as i32).unwrap();
                }
            }
        }
    }
    writer.finalize().unwrap();
}

#[test]
fn every_sample_format_rate_and_channel_count_decodes_to_16k_mono() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (hound::SampleFormat::Int, 8, 8000, 1),
        (hound::SampleFormat::Int, 16, 44100, 2),
        (hound::SampleFormat::Int, 24, 48000, 2),
        (hound::SampleFormat::Int, 32, 22050, 1),
        (hound::SampleFormat::Float, 32, 16000, 6),
    ];
    for (format, bits, rate, channels) in cases {
        let path = dir
            .path()
            .join(format!("{format:?}{bits}-{rate}-{channels}.wav"));
        let spec = hound::WavSpec {
            channels,
            sample_rate: rate,
            bits_per_sample: bits,
            sample_format: format,
        };
        write_stereo(&path, spec, 0.5);
        let mono = read_wav_mono(&path).unwrap();
        assert_eq!(mono.sample_rate, rate);
        let peak = mono.samples.iter().fold(0.0_f32, |m, s| m.max(s.abs()));
        assert!((peak - 0.5).abs() < 0.02, "{}: peak {peak}", path.display());
        let samples = read_wav_16k(&path).unwrap();
        assert_eq!(samples.len(), 8000, "{}", path.display());
        let rms = common::rms(&samples[1000..7000]);
        assert!(
            (rms - 0.5 / 2f32.sqrt()).abs() < 0.02,
            "{}: rms {rms}",
            path.display()
        );
    }
}

#[test]
fn a_missing_file_names_the_file() {
    let error = read_wav_mono(Path::new("/nonexistent/speech.wav")).unwrap_err();
    assert!(matches!(error, WavError::Open { .. }), "{error:?}");
    assert!(error.to_string().contains("/nonexistent/speech.wav"));
}

#[test]
fn a_corrupt_file_is_a_clear_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.wav");
    std::fs::write(&garbage, b"this is not a RIFF file at all, just text").unwrap();
    let error = read_wav_mono(&garbage).unwrap_err();
    assert!(matches!(error, WavError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("garbage.wav"), "{error}");

    // A real WAV cut off in the middle of its header.
    let good = dir.path().join("good.wav");
    common::write_wav(&good, &common::tone(300.0, 16000, 0.2), 16000);
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.wav");
    std::fs::write(&cut, &bytes[..30]).unwrap();
    let error = read_wav_mono(&cut).unwrap_err();
    assert!(matches!(error, WavError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("cut.wav"), "{error}");
}

#[test]
fn an_unsupported_encoding_is_a_clear_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // A-law (format tag 6), as telephony recorders write it.
    let path = dir.path().join("alaw.wav");
    let status = std::process::Command::new("sox")
        .args(["-n", "-r", "8000", "-c", "1", "-e", "a-law"])
        .arg(&path)
        .args(["synth", "0.2", "sine", "440"])
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        common::skip_or_fail("sox is not installed (Debian sox)");
        return;
    }
    let error = read_wav_mono(&path).unwrap_err();
    assert!(matches!(error, WavError::Unsupported { .. }), "{error:?}");
    assert!(error.to_string().contains("alaw.wav"), "{error}");
}

/// A header claiming 4,294,967,291 Hz (or 1 Hz) is refused before the resampler sizes buffers from it
/// (it allocated gigabytes).
#[test]
fn an_absurd_sample_rate_is_refused_before_resampling() {
    let dir = tempfile::tempdir().unwrap();
    for (rate, bits, supported) in [
        (1_u32, 16, false),
        // 8-bit mono: the byte rate equals the sample rate, so hound finds the header consistent.
        (4_294_967_291, 8, false),
        (7_999, 16, false),
        (192_001, 16, false),
        (8_000, 16, true),
        (192_000, 8, true),
    ] {
        let path = dir.path().join(format!("rate-{rate}.wav"));
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: bits,
            sample_format: hound::SampleFormat::Int,
        };
        write_stereo(&path, spec, 0.1);
        // The canonical header keeps the rate at byte 24 and the byte rate at 28.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[24..28].copy_from_slice(&rate.to_le_bytes());
        let byte_rate = rate.wrapping_mul(u32::from(bits / 8));
        bytes[28..32].copy_from_slice(&byte_rate.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        match read_wav_16k(&path) {
            Ok(samples) => assert!(supported, "{rate} Hz accepted ({} samples)", samples.len()),
            Err(error) => {
                assert!(!supported, "{rate} Hz refused: {error}");
                assert!(matches!(error, WavError::Unsupported { .. }), "{error:?}");
                assert!(error.to_string().contains(&format!("{rate} Hz")), "{error}");
            }
        }
    }
}

fn silero() -> Option<SileroVad> {
    let (model, runtime) = common::silero_paths()?;
    Some(SileroVad::new(&model, &runtime).unwrap())
}

#[test]
fn silero_tells_speech_from_silence() {
    let Some(mut vad) = silero() else { return };
    let dir = tempfile::tempdir().unwrap();
    let speech_wav = dir.path().join("speech.wav");
    if !common::espeak("The quick brown fox jumps over the lazy dog.", &speech_wav) {
        return;
    }
    let speech = read_wav_16k(&speech_wav).unwrap();
    let speech_max = speech
        .chunks_exact(FRAME_SAMPLES)
        .map(|f| vad.speech_probability(f).unwrap())
        .fold(0.0_f32, f32::max);
    vad.reset();
    let silence_max = (0..30)
        .map(|_| vad.speech_probability(&[0.0; FRAME_SAMPLES]).unwrap())
        .fold(0.0_f32, f32::max);
    assert!(speech_max > 0.8, "speech max probability {speech_max}");
    assert!(silence_max < 0.1, "silence max probability {silence_max}");
    assert_eq!(
        vad.speech_probability(&[0.0; 100]).unwrap_err(),
        VadError::FrameLength {
            expected: FRAME_SAMPLES,
            got: 100
        }
    );
}

/// The listener skips the model over quiet frames and resets it when sound comes back: a reset must
/// leave it as a silence would, or it hears the first syllables late. The user's six phrases of the
/// echo fixtures (a soft "Ac-", "Wait"), alone: the first frame Silero calls speech after a reset that
/// followed speech, and after 3.2 s of silence, from the phrase's first sound.
#[test]
fn after_a_reset_silero_hears_the_first_syllables_as_after_a_silence() {
    use common::echo::{fixture, fixture_mic, json};
    let (Some(mut reset), Some(mut streamed)) = (silero(), silero()) else {
        return;
    };
    let mic = fixture_mic("echo-barge-in");
    let echo = fixture_mic("echo-room-near");
    let case = json(&fixture("echo-barge-in").join("case.json"));
    let first_speech = |vad: &mut SileroVad, phrase: &[f32]| {
        phrase
            .chunks_exact(FRAME_SAMPLES)
            .position(|frame| vad.speech_probability(frame).unwrap() >= 0.5)
    };
    let mut phrases = 0;
    for event in case["events"].as_array().unwrap() {
        if event["kind"] != "words" {
            continue;
        }
        let at = |field: &str| event[field].as_u64().unwrap() as usize;
        let phrase: Vec<f32> = (at("onset")..at("end")).map(|i| mic[i] - echo[i]).collect();
        for _ in 0..100 {
            streamed.speech_probability(&[0.0; FRAME_SAMPLES]).unwrap();
        }
        let after_silence = first_speech(&mut streamed, &phrase).unwrap();
        // Speech first (the state it resets from is not a silent one), then the reset.
        first_speech(&mut reset, &phrase);
        reset.reset();
        let after_reset = first_speech(&mut reset, &phrase).unwrap();
        assert!(
            after_reset <= after_silence,
            "{}: speech from frame {after_reset} after a reset, {after_silence} after a silence",
            event["text"]
        );
        phrases += 1;
    }
    assert_eq!(phrases, 6);
}

#[test]
fn silero_reports_a_missing_model_and_runtime() {
    let Some((model, runtime)) = common::silero_paths() else {
        return;
    };
    let missing = Path::new("/nonexistent/silero_vad.onnx");
    assert_eq!(
        SileroVad::new(missing, &runtime).err(),
        Some(VadError::ModelMissing(missing.to_path_buf()))
    );
    // A runtime path other than the one loaded first is refused, not silently ignored. (Load the
    // real one first: a failed first load is remembered for the whole test process.)
    tomo_onnx::ensure_runtime(&runtime).unwrap();
    let error = SileroVad::new(&model, Path::new("/nonexistent/libonnxruntime.so")).err();
    assert!(matches!(error, Some(VadError::Runtime(_))), "{error:?}");
}

#[test]
fn two_utterances_with_a_pause_give_two_segments_with_pre_roll() {
    let Some(mut vad) = silero() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.wav");
    let second = dir.path().join("second.wav");
    if !common::espeak("Hello Tomo, what is the weather like today?", &first)
        || !common::flite("Please remind me to call my sister tomorrow.", &second)
    {
        return;
    }
    // Both voices at 22 050 Hz: 1 s silence, speech, 1.5 s silence, speech, 1 s silence.
    let rate = 22050;
    let a = read_wav_mono(&first).unwrap();
    let b = read_wav_mono(&second).unwrap();
    let b = tomo_audio::resample::resample(&b.samples, b.sample_rate, rate).unwrap();
    let a = tomo_audio::resample::resample(&a.samples, a.sample_rate, rate).unwrap();
    let silence = |secs: f32| vec![0.0_f32; (rate as f32 * secs) as usize];
    let mut all = silence(1.0);
    all.extend(&a);
    all.extend(silence(1.5));
    let second_start = all.len();
    all.extend(&b);
    all.extend(silence(1.0));
    let input = dir.path().join("conversation.wav");
    common::write_wav(&input, &all, rate);

    let onset_a = common::energy_onset(&all, rate, 0.01).unwrap();
    let onset_b = second_start + common::energy_onset(&b, rate, 0.01).unwrap();
    let secs = |i: usize| Duration::from_secs_f64(i as f64 / f64::from(rate));

    let segments = segments_from_wav(&input, &mut vad, &SegmenterConfig::default()).unwrap();
    let spans: Vec<_> = segments.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(segments.len(), 2, "segments: {spans:?}");
    // The audio before the speech onset is kept (at least 250 ms of it: the pre-roll is 300 ms before
    // the first frame the VAD calls speech, which can begin a few ms after the first sound) so the
    // first word is whole.
    let pre_roll = Duration::from_millis(250);
    assert!(
        segments[0].start + pre_roll <= secs(onset_a),
        "first segment starts at {:?}, speech energy at {:?}",
        segments[0].start,
        secs(onset_a)
    );
    assert!(
        segments[1].start + pre_roll <= secs(onset_b),
        "second segment starts at {:?}, speech energy at {:?}",
        segments[1].start,
        secs(onset_b)
    );
    // Each segment holds its utterance to the end and nothing of the other one.
    let end_a = secs(rate as usize + common::energy_offset(&a, rate, 0.01).unwrap());
    let end_b = secs(second_start + common::energy_offset(&b, rate, 0.01).unwrap());
    assert!(
        segments[0].end >= end_a,
        "{spans:?}, speech ends at {end_a:?}"
    );
    assert!(segments[0].end <= secs(onset_b), "{spans:?}");
    assert!(
        segments[1].end >= end_b,
        "{spans:?}, speech ends at {end_b:?}"
    );
    for segment in &segments {
        let expected = (segment.end - segment.start).as_secs_f64() * 16000.0;
        assert!((segment.samples.len() as f64 - expected).abs() <= 1.0);
    }
}
