//! Speech to text through an OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI, Groq, a local
//! faster-whisper server, ...): the utterance goes up as a 16 kHz mono WAV in a multipart form.

use std::io::Cursor;
use std::time::Duration;

use reqwest::blocking::{Client, multipart};

use super::{AsrError, SpeechToText, Transcript};

#[derive(Debug, Clone)]
pub struct CloudAsr {
    client: Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    language: Option<String>,
}

#[derive(serde::Deserialize)]
struct Response {
    text: String,
    language: Option<String>,
}

impl CloudAsr {
    /// `base_url` like `https://api.openai.com/v1`; `model` like `whisper-1`.
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
        language: Option<String>,
    ) -> Result<Self, AsrError> {
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| AsrError::Service(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            base_url: base_url.into(),
            model: model.into(),
            api_key,
            language,
        })
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/audio/transcriptions",
            self.base_url.trim_end_matches('/')
        )
    }
}

/// 16-bit PCM WAV: every service accepts it, and it is half the size of float WAV.
pub fn wav_bytes(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, AsrError> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut cursor = Cursor::new(Vec::new());
    let fail = |e: hound::Error| AsrError::Failed(format!("cannot encode WAV: {e}"));
    let mut writer = hound::WavWriter::new(&mut cursor, spec).map_err(fail)?;
    for sample in samples {
        writer
            .write_sample((sample.clamp(-1.0, 1.0) * f32::from(i16::MAX)) as i16)
            .map_err(fail)?;
    }
    writer.finalize().map_err(fail)?;
    Ok(cursor.into_inner())
}

impl SpeechToText for CloudAsr {
    fn name(&self) -> &str {
        "cloud"
    }

    fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
        let url = self.endpoint();
        let service = |message: String| AsrError::Service(format!("{url}: {message}"));
        let file = multipart::Part::bytes(wav_bytes(samples, 16_000)?)
            .file_name("audio.wav")
            .mime_str("audio/wav")
            .map_err(|e| service(e.to_string()))?;
        let mut form = multipart::Form::new()
            .part("file", file)
            .text("model", self.model.clone())
            .text("response_format", "json");
        if let Some(language) = &self.language {
            form = form.text("language", language.clone());
        }
        let mut request = self.client.post(&url).multipart(form);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| service(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().unwrap_or_default();
            let detail = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
                .unwrap_or_else(|| body.chars().take(300).collect());
            return Err(service(format!("HTTP {}: {detail}", status.as_u16())));
        }
        let parsed: Response = response
            .json()
            .map_err(|e| service(format!("unexpected response: {e}")))?;
        Ok(Transcript {
            text: parsed.text.trim().to_string(),
            language: parsed.language.or_else(|| self.language.clone()),
        })
    }
}
