//! One way to assemble a session, for every front end: profile + flags → models (installed on first
//! run), voice out (speakers, a WAV file or text), voice in (the microphone or none), plugins, the
//! session itself, and a [`RunningSession`] with one [`RunningSession::shutdown`]. Every missing piece
//! degrades (no speakers → text answers; no microphone → typing) and is said once as a notice.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tomo_audio::{BargeInConfig, RenderReference, RodioOutput, WavOutput};
use tomo_config::profile::Profile;
use tomo_core::session::{SessionHandle, start_session};
use tomo_core::sink::{OutputSink, TextSink};
use tomo_models::{InstallEvent, ModelStore};
use tomo_plugin_api::hooks::Hook;
use tomo_protocol::{EventEnvelope, Op};
use tomo_speech::voice_sink::VoiceSink;

use crate::brain::{self, Brain, BrainConnector, BrainProgress, OnInstall};
use crate::env::{EnvOptions, Prepared, environment_with};
use crate::listen::{ListenFlags, Listener, start_listening};
use crate::notices::{Notice, Notify, SessionNotices};
use crate::voice;

/// Where answers go.
#[derive(Debug, Clone)]
pub enum VoiceOut {
    /// Text events only.
    Text,
    /// The profile's voice on its output device; `workers` sentences synthesized ahead of playback.
    Speakers { workers: usize },
    /// The profile's voice into a WAV file: exactly what would have been played.
    Wav { path: PathBuf, workers: usize },
}

/// Where the user's voice comes from.
#[derive(Debug, Clone)]
pub enum VoiceIn {
    /// Typed (or transcribed by the front end itself, e.g. from a file).
    None,
    /// The profile's input device (or the default).
    Microphone { duplex: Duplex },
}

/// Whether the microphone listens while the character speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Duplex {
    /// As the profile says (`[asr] interrupt`, on unless set off): on speakers the user's words
    /// interrupt, with the echo canceller keeping the character's own voice out of the microphone;
    /// speech over the answer holds it until its words decide, so what the canceller lets through (the
    /// character's own words), a cough or an "mm-hm" costs a short gap and not the answer. Without
    /// speakers the user can always interrupt.
    #[default]
    Auto,
    /// Never listen while the character speaks.
    Half,
    /// Always listen (headphones): the user's words interrupt.
    Full,
}

/// What to do when the profile needs models that are not installed.
pub enum ModelInstall {
    /// Install them, reporting progress (first run).
    Install(Box<dyn FnMut(InstallEvent) + Send>),
    /// Do not download: the voice degrades (or, for a WAV output, the start fails) with a hint.
    Require,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start the session: {0}")]
    Session(#[from] tomo_core::session::CharacterError),
    /// Only for outputs that cannot degrade (a WAV file): speakers fall back to text instead.
    #[error("{0:#}")]
    Voice(anyhow::Error),
    /// The profile's embedded brain cannot be installed or started.
    #[error("{0}")]
    Brain(tomo_llm::LlmError),
}

/// Builds a session. Front ends set what differs and call [`SessionBuilder::start`].
pub struct SessionBuilder {
    profile_path: PathBuf,
    profile: Profile,
    env: EnvOptions,
    voice_in: VoiceIn,
    voice_out: VoiceOut,
    install: ModelInstall,
    notices: SessionNotices,
    extra_hooks: Vec<Arc<dyn Hook>>,
    flags: ListenFlags,
    brain_progress: Box<dyn FnMut(BrainProgress) + Send>,
    ask_on_terminal: bool,
}

impl SessionBuilder {
    /// A text session for `profile` (loaded from `profile_path`, which locates its plugins).
    pub fn new(profile_path: &Path, profile: Profile) -> Self {
        Self {
            profile_path: profile_path.to_path_buf(),
            profile,
            env: EnvOptions::default(),
            voice_in: VoiceIn::None,
            voice_out: VoiceOut::Text,
            install: ModelInstall::Require,
            notices: SessionNotices::new(),
            extra_hooks: Vec::new(),
            flags: ListenFlags::default(),
            brain_progress: Box::new(|progress| tracing::debug!(?progress, "embedded brain")),
            ask_on_terminal: false,
        }
    }

    /// Where loading the embedded brain at start reports its progress (a start-up panel, a terminal
    /// line); by default only the log.
    pub fn brain_progress(mut self, progress: impl FnMut(BrainProgress) + Send + 'static) -> Self {
        self.brain_progress = Box::new(progress);
        self
    }

    /// Before the session starts, ask y/N on the terminal about each program the profile's plugins
    /// would run for the first time (`tomo chat|run|serve`). Without a terminal, or for what is not
    /// answered here, the session asks its clients (`approval_requested`).
    pub fn ask_about_commands_on_terminal(mut self) -> Self {
        self.ask_on_terminal = true;
        self
    }

    /// Share the microphone's switches with the front end (the desktop tray reads the mute state).
    pub fn listen_flags(mut self, flags: ListenFlags) -> Self {
        self.flags = flags;
        self
    }

    pub fn env(mut self, env: EnvOptions) -> Self {
        self.env = env;
        self
    }

    pub fn voice_in(mut self, voice_in: VoiceIn) -> Self {
        self.voice_in = voice_in;
        self
    }

    pub fn voice_out(mut self, voice_out: VoiceOut) -> Self {
        self.voice_out = voice_out;
        self
    }

    pub fn install(mut self, install: ModelInstall) -> Self {
        self.install = install;
        self
    }

    /// The voice the front end's flags ask for: speakers and the microphone (installing what the profile
    /// needs on the first run, reported to `install`), or text only with `--text`.
    /// The install policy holds in text mode too: the embedded brain's model is installed the same way.
    pub fn voice(self, flags: &crate::flags::VoiceFlags, install: ModelInstall) -> Self {
        let this = self.install(install);
        if flags.text {
            return this;
        }
        this.voice_out(VoiceOut::Speakers {
            workers: flags.tts_workers,
        })
        .voice_in(VoiceIn::Microphone {
            duplex: flags.duplex(),
        })
    }

    /// Hooks of the embedding program, run after the profile's hook plugins.
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.extra_hooks.push(hook);
        self
    }

    /// Where the front end's own notices go (they reach every client once the session runs).
    pub fn notify(&self) -> Notify {
        self.notices.notify()
    }

    /// Starts everything; the session's events (from `session_ready` on) come on the receiver.
    pub async fn start(
        mut self,
    ) -> Result<(RunningSession, mpsc::UnboundedReceiver<EventEnvelope>), StartError> {
        let notify = self.notices.notify();
        let wants_voice =
            !matches!(self.voice_out, VoiceOut::Text) || !matches!(self.voice_in, VoiceIn::None);
        let mut install = match std::mem::replace(&mut self.install, ModelInstall::Require) {
            ModelInstall::Install(on_event) => Some(on_event),
            ModelInstall::Require => None,
        };
        let store = if wants_voice {
            match prepare_models(&self.profile, &mut install).await {
                Ok(store) => Some(store),
                // A file was asked for: nothing to degrade to.
                Err(error) if matches!(self.voice_out, VoiceOut::Wav { .. }) => {
                    return Err(StartError::Voice(error));
                }
                Err(error) => {
                    notify(Notice::warning(format!(
                        "voice models unavailable ({error:#}); text only"
                    )));
                    None
                }
            }
        } else {
            None
        };
        // What the speakers play, for the microphone's echo canceller: with it the user can talk over
        // the character on speakers (full duplex).
        let reference = matches!(
            (&self.voice_in, &self.voice_out),
            (VoiceIn::Microphone { .. }, VoiceOut::Speakers { .. })
        )
        .then(RenderReference::new);
        let (sink, speakers) = output_sink(
            &self.profile,
            &self.voice_out,
            store.as_ref(),
            reference.clone(),
            &notify,
        )?;
        // No speakers opened: nothing to cancel.
        let reference = reference.filter(|_| speakers);
        // Built before the profile moves into the session; the microphone opens once it runs.
        let mic_profile = match (&self.voice_in, &store) {
            (VoiceIn::Microphone { duplex }, Some(store)) => {
                Some((self.profile.clone(), store.clone(), *duplex))
            }
            _ => None,
        };
        if self.ask_on_terminal {
            let (path, profile, options) = (
                self.profile_path.clone(),
                self.profile.clone(),
                self.env.clone(),
            );
            let asked = tokio::task::spawn_blocking(move || {
                let commands = crate::trust::profile_commands(&path, &profile, &options)
                    .map_err(|e| e.to_string())?;
                crate::trust::ask_on_terminal(&commands, &crate::trust::trust_store(&options))
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
            if let Err(error) = asked {
                notify(Notice::warning(format!(
                    "cannot ask about the plugins' commands ({error}); the session asks instead"
                )));
            }
        }
        // The embedded brain (brain.rs): installed on the first run and started before the session, so
        // loading shows as start-up progress and the character finds it running.
        let brain = ModelStore::from_env()
            .ok()
            .map(|store| Brain::new(store, Arc::clone(&notify)));
        if let Some(brain) = &brain {
            let (profile, env) = (&self.profile, &self.env);
            brain::prepare(brain, profile, env, &mut install, &mut *self.brain_progress)
                .await
                .map_err(StartError::Brain)?;
        }
        let connector: Arc<dyn tomo_llm::LlmConnector> = match &brain {
            Some(brain) => Arc::new(BrainConnector {
                brain: Arc::clone(brain),
            }),
            None => Arc::new(tomo_openai::OpenAiConnector),
        };
        let mut prepared =
            environment_with(&self.profile_path, &self.profile, &self.env, connector);
        prepared.env.extra_hooks.extend(self.extra_hooks);
        let (handle, events) = start_session(self.profile, prepared.env.clone(), sink).await?;
        let ops = handle.sender();
        self.notices.connect(ops.clone());

        let flags = self.flags;
        // Full duplex unless the user or the profile asked for half: without speakers the character
        // cannot hear itself, on speakers the echo canceller and the answer's hold keep it from
        // interrupting itself. The session owns the mode (the UI can change it).
        let half_duplex = mic_profile
            .as_ref()
            .is_some_and(|(profile, _, duplex)| match duplex {
                Duplex::Auto => speakers && !profile.asr.interrupt,
                Duplex::Half => true,
                Duplex::Full => false,
            });
        if mic_profile.is_some() {
            ops.send(Op::SetHalfDuplex {
                enabled: half_duplex,
            })
            .await
            .ok();
        }
        let microphone = match mic_profile {
            Some((profile, store, _)) => {
                let (ops, flags, notify) = (ops.clone(), flags.clone(), Arc::clone(&notify));
                let reference = reference.clone();
                // Off the async workers: loading whisper blocks, and a cloud recogniser's blocking HTTP
                // client must not be dropped on an async thread if the microphone cannot open.
                tokio::task::spawn_blocking(move || {
                    open_microphone(&profile, &store, reference, ops, flags, &notify)
                })
                .await
                .unwrap_or_else(|error| {
                    tracing::error!(%error, "opening the microphone failed");
                    None
                })
            }
            None => None,
        };
        // The microphone front end follows the session (speaking, mute, push-to-talk) from its events,
        // before the front end sees them.
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        tokio::spawn(follow_events(events, flags.clone(), events_tx));
        let running = RunningSession {
            handle,
            ops,
            prepared,
            flags,
            microphone,
            store,
            brain,
        };
        Ok((running, events_rx))
    }
}

/// VAD + ASR + the microphone, or `None` (said as a notice): the user types then.
fn open_microphone(
    profile: &Profile,
    store: &ModelStore,
    echo_reference: Option<RenderReference>,
    ops: mpsc::Sender<Op>,
    flags: ListenFlags,
    notify: &Notify,
) -> Option<String> {
    let (vad, asr) = match (voice::vad(store), voice::asr(profile, store)) {
        (Ok(vad), Ok(asr)) => (vad, asr),
        (Err(error), _) | (_, Err(error)) => {
            notify(Notice::warning(format!(
                "no speech input ({error:#}); type your messages"
            )));
            return None;
        }
    };
    let listener = Listener {
        device: profile.asr.input_device.clone(),
        vad,
        asr,
        end_of_turn: voice::end_of_turn(store),
        echo_reference,
        barge_in: BargeInConfig::default(),
    };
    match start_listening(listener, ops, flags, Arc::clone(notify)) {
        Ok(device) => Some(device),
        Err(error) => {
            notify(Notice::warning(format!(
                "no microphone ({error}); type your messages"
            )));
            None
        }
    }
}

async fn follow_events(
    mut events: mpsc::UnboundedReceiver<EventEnvelope>,
    flags: ListenFlags,
    out: mpsc::UnboundedSender<EventEnvelope>,
) {
    while let Some(envelope) = events.recv().await {
        flags.follow(&envelope.event);
        if out.send(envelope).is_err() {
            // Nobody reads the events any more; the session still needs its microphone switches.
            while let Some(envelope) = events.recv().await {
                flags.follow(&envelope.event);
            }
            return;
        }
    }
}

/// The model store with what the profile's voice needs, installed on the first run (`install`: the
/// progress callback, handed back for the brain's model; `None`: do not install).
async fn prepare_models(
    profile: &Profile,
    install: &mut Option<OnInstall>,
) -> anyhow::Result<ModelStore> {
    let store = ModelStore::from_env()?;
    {
        match install.take() {
            Some(mut on_event) => {
                let install_store = store.clone();
                let install_profile = profile.clone();
                let (installed, on_event) = tokio::task::spawn_blocking(move || {
                    let installed =
                        voice::install_missing(&install_store, &install_profile, &mut *on_event);
                    (installed, on_event)
                })
                .await?;
                *install = Some(on_event);
                let installed = installed?;
                if !installed.is_empty() {
                    tracing::info!(models = ?installed, root = %store.root.display(), "first run: models installed");
                }
            }
            None => {
                let missing = voice::missing_models(&store, profile)?;
                if !missing.is_empty() {
                    anyhow::bail!(
                        "models missing from {}: {} (install them with `tomo models install`)",
                        store.root.display(),
                        missing.join(", ")
                    );
                }
            }
        }
    }
    Ok(store)
}

/// The sink, and whether it plays on speakers (with `reference` fed).
fn output_sink(
    profile: &Profile,
    voice_out: &VoiceOut,
    store: Option<&ModelStore>,
    reference: Option<RenderReference>,
    notify: &Notify,
) -> Result<(Arc<dyn OutputSink>, bool), StartError> {
    let (workers, device) = match voice_out {
        VoiceOut::Text => return Ok((Arc::new(TextSink), false)),
        VoiceOut::Speakers { workers } => (*workers, None),
        VoiceOut::Wav { path, workers } => (*workers, Some(path)),
    };
    let voiced = store
        .ok_or_else(|| anyhow::anyhow!("no voice models"))
        .and_then(|store| {
            let tts = voice::tts(profile, store)?;
            let output: Arc<dyn tomo_audio::output::AudioOutput> = match device {
                Some(path) => Arc::new(WavOutput::create(path)?),
                None => Arc::new(
                    RodioOutput::open_with_reference(
                        profile.tts.output_device.as_deref(),
                        reference,
                    )
                    .map_err(|e| anyhow::anyhow!("no speakers ({e})"))?,
                ),
            };
            // A character switch swaps the voice too.
            let sink =
                VoiceSink::new(tts, output, workers).with_voices(voice::voice_builder(store));
            sink.warm_up();
            anyhow::Ok(Arc::new(sink) as Arc<dyn OutputSink>)
        });
    match voiced {
        Ok(sink) => Ok((sink, device.is_none())),
        // A file was asked for: nothing to degrade to.
        Err(error) if device.is_some() => Err(StartError::Voice(error)),
        Err(error) => {
            notify(Notice::warning(format!("{error:#}; answers are text only")));
            Ok((Arc::new(TextSink), false))
        }
    }
}

/// A session that runs, with what its front end needs.
pub struct RunningSession {
    handle: SessionHandle,
    ops: mpsc::Sender<Op>,
    prepared: Prepared,
    flags: ListenFlags,
    /// The microphone's name when the session listens.
    pub microphone: Option<String>,
    /// The model store, when the voice models are there.
    pub store: Option<ModelStore>,
    brain: Option<Arc<Brain>>,
}

impl RunningSession {
    /// Sends ops to the session.
    pub fn ops(&self) -> mpsc::Sender<Op> {
        self.ops.clone()
    }

    /// The switches the microphone front end reads (speaking, mute, push-to-talk).
    pub fn listen_flags(&self) -> &ListenFlags {
        &self.flags
    }

    /// The embedded brain of this front end (its engine runs while a character uses it).
    pub fn brain(&self) -> Option<&Arc<Brain>> {
        self.brain.as_ref()
    }

    /// The one way to stop: finish the turn's bookkeeping (history flushed), stop the session, give
    /// background memory work (which may ask the embedded brain) a bounded moment to finish, then stop
    /// the brain's engine.
    pub async fn shutdown(self) {
        self.ops.send(Op::Shutdown).await.ok();
        drop(self.ops);
        self.handle.join().await;
        let _ = tokio::time::timeout(Duration::from_secs(30), self.prepared.settle()).await;
        if let Some(brain) = &self.brain {
            brain.shutdown().await;
        }
    }
}
