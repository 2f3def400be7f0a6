//! Japanese for Kokoro (not yet available): readings would come from Debian's `open-jtalk`.

use super::super::TtsError;

#[derive(Debug)]
pub struct JapaneseFrontend;

impl JapaneseFrontend {
    pub fn new() -> Result<Self, TtsError> {
        Err(TtsError::VoiceMissing(
            "a Japanese text front end for Kokoro (not built yet)".into(),
        ))
    }

    pub fn phonemize(&self, _text: &str) -> Result<String, TtsError> {
        Ok(String::new())
    }
}
