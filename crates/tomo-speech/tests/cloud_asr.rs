//! CloudAsr against a local OpenAI-compatible endpoint that checks the multipart upload.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::sync::mpsc;

use common::http::{header, read_request};
use tomo_speech::asr::{AsrError, CloudAsr, SpeechToText};

/// Answers one request with `status` and `body`; sends the request (head, body) back to the test.
fn one_shot(
    status: &'static str,
    body: &'static str,
) -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let request = read_request(&mut stream);
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).unwrap();
        tx.send(request).unwrap();
    });
    (base, rx)
}

#[test]
fn uploads_a_wav_as_multipart_and_returns_the_text() {
    let (base, rx) = one_shot("200 OK", r#"{"text":"  hello from the cloud "}"#);
    let asr = CloudAsr::new(base, "whisper-1", Some("sk-test".into()), Some("en".into())).unwrap();
    let samples: Vec<f32> = (0..16_000).map(|i| (i as f32 * 0.05).sin() * 0.3).collect();
    let transcript = asr.transcribe(&samples).unwrap();
    assert_eq!(transcript.text, "hello from the cloud");
    assert_eq!(transcript.language.as_deref(), Some("en"));

    let (head, body) = rx.recv().unwrap();
    assert!(head.starts_with("POST /v1/audio/transcriptions "), "{head}");
    assert_eq!(header(&head, "authorization"), Some("Bearer sk-test"));
    let content_type = header(&head, "content-type").unwrap();
    let boundary = content_type.split("boundary=").nth(1).unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains(&format!("--{boundary}")));
    assert!(
        text.contains("name=\"model\"\r\n\r\nwhisper-1\r\n"),
        "{text}"
    );
    assert!(text.contains("name=\"language\"\r\n\r\nen\r\n"));
    assert!(text.contains("name=\"file\"; filename=\"audio.wav\""));
    assert!(text.contains("Content-Type: audio/wav"));
    // The file part is a 16 kHz mono 16-bit WAV of the samples: RIFF header + 2 bytes per sample.
    let riff = body.windows(4).position(|w| w == b"RIFF").unwrap();
    let wav = hound::WavReader::new(std::io::Cursor::new(&body[riff..riff + 44 + 32_000])).unwrap();
    assert_eq!(
        (wav.spec().sample_rate, wav.spec().channels, wav.len()),
        (16_000, 1, 16_000)
    );
}

#[test]
fn service_errors_carry_the_message() {
    let (base, _rx) = one_shot(
        "401 Unauthorized",
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    );
    let asr = CloudAsr::new(base, "whisper-1", None, None).unwrap();
    let error = asr.transcribe(&[0.0; 1600]).unwrap_err();
    assert!(matches!(error, AsrError::Service(_)), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("401") && message.contains("Incorrect API key"),
        "{message}"
    );
}
