//! The OpenAI-compatible cloud voice against a tiny local HTTP server that checks the request and answers
//! with generated audio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tomo_speech::tts::{CloudAudioFormat, CloudTts, CloudTtsConfig, TextToSpeech, TtsError};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Answers every request with `reply(&request) -> (status, content type, body)`; records requests.
struct Server {
    base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(reply: impl Fn(&Seen) -> (u16, &'static str, Vec<u8>) + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    let (name, value) = line.split_once(':').unwrap();
                    headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
                }
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let request = Seen {
                    path,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                let (status, content_type, body) = reply(&request);
                log.lock().unwrap().push(request);
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes()).unwrap();
                stream.write_all(&body).unwrap();
            }
        });
        Self { base_url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn config(server: &Server, format: CloudAudioFormat) -> CloudTtsConfig {
    CloudTtsConfig {
        base_url: format!("{}/", server.base_url),
        model: "gpt-4o-mini-tts".into(),
        voice: "nova".into(),
        api_key: Some("sk-test".into()),
        speed: 1.25,
        format,
        timeout: Duration::from_secs(10),
    }
}

/// A 440 Hz tone, 16-bit mono, as a WAV file.
fn tone_wav(rate: u32, samples: usize) -> (Vec<u8>, Vec<i16>) {
    let pcm: Vec<i16> = (0..samples)
        .map(|i| ((i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 12000.0) as i16)
        .collect();
    let mut bytes = std::io::Cursor::new(Vec::new());
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::new(&mut bytes, spec).unwrap();
    pcm.iter().for_each(|s| writer.write_sample(*s).unwrap());
    writer.finalize().unwrap();
    (bytes.into_inner(), pcm)
}

#[test]
fn sends_an_openai_speech_request_and_decodes_the_wav() {
    let (wav, pcm) = tone_wav(24_000, 2400);
    let server = Server::start(move |_| (200, "audio/wav", wav.clone()));
    let tts = CloudTts::new(config(&server, CloudAudioFormat::Wav)).unwrap();
    assert_eq!(tts.name(), "openai");
    let audio = tts.synthesize("Hello from the cloud.").unwrap();

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.path, "/v1/audio/speech");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        serde_json::json!({
            "model": "gpt-4o-mini-tts",
            "input": "Hello from the cloud.",
            "voice": "nova",
            "response_format": "wav",
            "speed": 1.25,
        })
    );
    assert_eq!(audio.sample_rate, 24_000);
    let expected: Vec<f32> = pcm.iter().map(|s| f32::from(*s) / 32768.0).collect();
    assert_eq!(audio.samples, expected);
}

#[test]
fn pcm_replies_are_read_at_the_configured_rate() {
    let (_, pcm) = tone_wav(24_000, 480);
    let raw: Vec<u8> = pcm.iter().flat_map(|s| s.to_le_bytes()).collect();
    let server = Server::start(move |_| (200, "audio/pcm", raw.clone()));
    let mut config = config(
        &server,
        CloudAudioFormat::Pcm {
            sample_rate: 24_000,
        },
    );
    config.api_key = None;
    let audio = CloudTts::new(config).unwrap().synthesize("Hi.").unwrap();
    let request = &server.seen()[0];
    assert_eq!(request.body["response_format"], "pcm");
    assert_eq!(request.header("authorization"), None);
    assert_eq!((audio.sample_rate, audio.samples.len()), (24_000, 480));
}

#[test]
fn long_text_is_sent_in_pieces_under_the_input_limit() {
    let (wav, _) = tone_wav(24_000, 100);
    let server = Server::start(move |_| (200, "audio/wav", wav.clone()));
    let tts = CloudTts::new(config(&server, CloudAudioFormat::Wav)).unwrap();
    let sentence = "This sentence is repeated to make a very long reply for the voice. ";
    let text = sentence.repeat(150); // about 10,000 characters
    let audio = tts.synthesize(&text).unwrap();
    let seen = server.seen();
    assert!(seen.len() >= 3, "{} requests", seen.len());
    let inputs: Vec<&str> = seen
        .iter()
        .map(|r| r.body["input"].as_str().unwrap())
        .collect();
    assert!(inputs.iter().all(|i| i.chars().count() <= 4096));
    assert!(
        inputs.iter().all(|i| i.ends_with("voice.")),
        "cut at sentence ends"
    );
    assert_eq!(inputs.join(" "), text.trim());
    assert_eq!(audio.samples.len(), 100 * seen.len());
}

#[test]
fn empty_text_makes_no_request() {
    let server = Server::start(|_| (500, "text/plain", Vec::new()));
    let tts = CloudTts::new(config(&server, CloudAudioFormat::Wav)).unwrap();
    let audio = tts.synthesize("  ").unwrap();
    assert!(audio.samples.is_empty());
    assert!(server.seen().is_empty());
}

#[test]
fn service_errors_carry_the_server_message() {
    let server = Server::start(|_| {
        let body = br#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#;
        (401, "application/json", body.to_vec())
    });
    let tts = CloudTts::new(config(&server, CloudAudioFormat::Wav)).unwrap();
    let err = tts.synthesize("Hello.").unwrap_err();
    assert!(matches!(err, TtsError::Service(_)), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("401"), "{message}");
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(message.contains("/v1/audio/speech"), "{message}");
}

#[test]
fn a_reply_that_is_not_audio_is_an_error() {
    let server = Server::start(|_| (200, "text/html", b"<html>proxy login</html>".to_vec()));
    let tts = CloudTts::new(config(&server, CloudAudioFormat::Wav)).unwrap();
    let err = tts.synthesize("Hello.").unwrap_err();
    assert!(err.to_string().contains("not a readable WAV"), "{err}");
}
