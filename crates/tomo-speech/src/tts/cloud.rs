//! OpenAI-compatible cloud voices: `POST {base_url}/audio/speech`.

use std::time::Duration;

use serde_json::json;
use tomo_audio::Audio;

use super::piper::check_speed;
use super::{TextToSpeech, TtsError, cli, text};

/// OpenAI rejects inputs over 4096 characters; long text is sent in pieces below that.
const MAX_INPUT_CHARS: usize = 4000;

/// The audio encoding to request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloudAudioFormat {
    /// `response_format: "wav"`.
    Wav,
    /// `response_format: "pcm"`: headerless signed 16-bit little-endian mono at `sample_rate`
    /// (24000 Hz for OpenAI).
    Pcm { sample_rate: u32 },
}

/// Where and how to synthesize.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudTtsConfig {
    /// API root, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    pub voice: String,
    /// Sent as a bearer token when set (local servers often need none).
    pub api_key: Option<String>,
    pub speed: f32,
    pub format: CloudAudioFormat,
    pub timeout: Duration,
}

impl CloudTtsConfig {
    /// OpenAI's defaults for `voice` and `speed`, overridable from the environment: `TOMO_TTS_BASE_URL`
    /// (default `https://api.openai.com/v1`), `TOMO_TTS_MODEL` (default `gpt-4o-mini-tts`), and the API key
    /// from `TOMO_TTS_API_KEY` or else `OPENAI_API_KEY`.
    pub fn from_env(voice: &str, speed: f32) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self {
            base_url: var("TOMO_TTS_BASE_URL")
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: var("TOMO_TTS_MODEL").unwrap_or_else(|| "gpt-4o-mini-tts".into()),
            voice: voice.to_owned(),
            api_key: var("TOMO_TTS_API_KEY").or_else(|| var("OPENAI_API_KEY")),
            speed,
            format: CloudAudioFormat::Wav,
            timeout: Duration::from_secs(60),
        }
    }
}

/// A voice from an OpenAI-compatible speech endpoint.
#[derive(Debug)]
pub struct CloudTts {
    config: CloudTtsConfig,
    url: String,
    client: reqwest::blocking::Client,
}

impl CloudTts {
    pub fn new(config: CloudTtsConfig) -> Result<Self, TtsError> {
        check_speed(config.speed)?;
        let url = format!("{}/audio/speech", config.base_url.trim_end_matches('/'));
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(TtsError::Service(format!(
                "base URL `{}` must start with http:// or https://",
                config.base_url
            )));
        }
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| TtsError::Service(format!("cannot create an HTTP client: {e}")))?;
        Ok(Self {
            config,
            url,
            client,
        })
    }

    fn request(&self, input: &str) -> Result<Audio, TtsError> {
        let format = match self.config.format {
            CloudAudioFormat::Wav => "wav",
            CloudAudioFormat::Pcm { .. } => "pcm",
        };
        let body = json!({
            "model": self.config.model,
            "input": input,
            "voice": self.config.voice,
            "response_format": format,
            "speed": self.config.speed,
        });
        let mut request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let url = &self.url;
        let response = request
            .send()
            .map_err(|e| TtsError::Service(format!("{url}: {e}")))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .map_err(|e| TtsError::Service(format!("{url}: reading the reply: {e}")))?;
        if !status.is_success() {
            return Err(TtsError::Service(format!(
                "{url} answered {status}: {}",
                error_message(&bytes)
            )));
        }
        match self.config.format {
            CloudAudioFormat::Wav => decode_streamed_wav(&bytes, url),
            CloudAudioFormat::Pcm { sample_rate } => {
                Ok(Audio::new(cli::pcm16_to_f32(&bytes), sample_rate))
            }
        }
    }
}

impl TextToSpeech for CloudTts {
    fn name(&self) -> &str {
        "openai"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        let mut audio = Audio::default();
        for piece in text::chunks(text, MAX_INPUT_CHARS) {
            cli::append(&mut audio, self.request(&piece)?)?;
        }
        if audio.sample_rate == 0 {
            // Nothing to say: empty audio at OpenAI's rate rather than an invalid 0 Hz.
            audio.sample_rate = 24_000;
        }
        Ok(audio)
    }
}

/// The `error.message` of an OpenAI-style error body, else the body itself (shortened).
fn error_message(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if let Some(message) = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message"))
        .and_then(|m| m.as_str())
    {
        return message.to_owned();
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text.to_owned(),
    }
}

/// Decodes a WAV reply. Streaming servers (OpenAI among them) write the header before they know the length
/// and put `0xFFFFFFFF` in the RIFF and data sizes, which strict readers reject; for those, the data chunk is
/// taken to run to the end of the body.
pub(crate) fn decode_streamed_wav(bytes: &[u8], what: &str) -> Result<Audio, TtsError> {
    match cli::decode_wav(bytes, what) {
        Ok(audio) => Ok(audio),
        Err(strict) => lenient_pcm16_wav(bytes).ok_or(strict),
    }
}

/// 16-bit PCM WAV whose declared sizes may be wrong.
fn lenient_pcm16_wav(bytes: &[u8]) -> Option<Audio> {
    if bytes.get(0..4)? != b"RIFF" || bytes.get(8..12)? != b"WAVE" {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let mut at = 12;
    let mut format = None;
    while at + 8 <= bytes.len() {
        let id = bytes.get(at..at + 4)?;
        let size = u32_at(at + 4)? as usize;
        let body = at + 8;
        if id == b"fmt " {
            // (audio format, channels, sample rate, bits per sample)
            format = Some((
                u16_at(body)?,
                u16_at(body + 2)?,
                u32_at(body + 4)?,
                u16_at(body + 14)?,
            ));
        } else if id == b"data" {
            let (kind, channels, rate, bits) = format?;
            if kind != 1 || bits != 16 {
                return None;
            }
            let end = body.saturating_add(size).min(bytes.len());
            let samples = cli::pcm16_to_f32(bytes.get(body..end)?);
            return Some(Audio::new(cli::downmix(&samples, channels), rate));
        }
        at = body.checked_add(size)?.checked_add(size % 2)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(samples: &[i16], rate: u32) -> Vec<u8> {
        let mut bytes = std::io::Cursor::new(Vec::new());
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut writer = hound::WavWriter::new(&mut bytes, spec).unwrap();
        for s in samples {
            writer.write_sample(*s).unwrap();
        }
        writer.finalize().unwrap();
        bytes.into_inner()
    }

    #[test]
    fn streamed_wav_with_unknown_sizes_decodes() {
        let mut bytes = wav(&[16384, -16384, 0], 24_000);
        bytes[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let data = bytes.windows(4).position(|w| w == b"data").unwrap();
        bytes[data + 4..data + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        let audio = decode_streamed_wav(&bytes, "test").unwrap();
        assert_eq!(audio.sample_rate, 24_000);
        assert_eq!(audio.samples, [0.5, -0.5, 0.0]);
    }

    #[test]
    fn error_bodies_are_summarized() {
        assert_eq!(
            error_message(br#"{"error": {"message": "bad voice", "type": "x"}}"#),
            "bad voice"
        );
        assert_eq!(error_message(b""), "(empty body)");
        assert!(error_message(&[b'x'; 1000]).chars().count() < 310);
    }

    #[test]
    fn base_url_must_be_http() {
        let mut config = CloudTtsConfig::from_env("alloy", 1.0);
        config.base_url = "ftp://example".into();
        assert!(matches!(CloudTts::new(config), Err(TtsError::Service(_))));
    }
}
