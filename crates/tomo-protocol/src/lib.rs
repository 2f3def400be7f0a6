//! The wire protocol between the engine and any client (CLI, Tauri UI, WebSocket): `Op` in, `Event` out.
//!
//! Plain serde types only. Every event a session emits is wrapped in an [`EventEnvelope`] carrying a
//! per-session, strictly increasing `seq`, so a client that reconnects can ask for what it missed.

use serde::{Deserialize, Serialize};

/// Identifies one turn within a session (user turn or proactive turn).
pub type TurnId = u64;

/// Operations a client sends to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// A typed (or transcribed) user message that starts a turn.
    UserText { text: String },
    /// The voice front end heard speech begin (VAD onset). Interrupts the turn in flight: the user wins.
    SpeechStarted,
    /// The voice front end heard speech over the character's voice (echo-cancelled, past the barge-in
    /// gate). The answer's audio stops at once but is kept until the words decide: real words interrupt
    /// the turn (as `speech_started` would, history keeping what was heard up to the stop); nothing
    /// recognisable, a backchannel ("mm-hm", "yeah") or the character's own words (echo) let the answer
    /// go on where it stopped. The `speech_paused` / `speech_ended` of the same utterance decide.
    SpeechOverAnswer,
    /// The user paused and the pause's words are recognised, but the end of the turn is not decided
    /// yet. The session may start the answer's request for these words; `speech_ended` with the same
    /// words uses it, anything else drops it.
    SpeechPaused { transcript: String },
    /// The user went on after `speech_paused`: the answer started for the pause's words is dropped.
    SpeechResumed,
    /// The user stopped speaking and ASR finished. An empty transcript (noise) starts no turn.
    SpeechEnded {
        transcript: String,
        /// How long ASR took after the end of the turn was decided.
        asr_ms: u64,
        /// How long after the last word the end of the turn was decided (the silence waited), so the
        /// session can date the end of speech: last word + end_of_turn_ms + asr_ms = now.
        #[serde(default)]
        end_of_turn_ms: u64,
        /// The utterance was speech over the answer (`speech_over_answer`) that stopped when the
        /// character went quiet: nothing of it was heard after the answer was held. That is what the
        /// echo canceller lets through of the character's own voice, so only an explicit request to
        /// stop ("stop", "wait") stops the answer.
        #[serde(default)]
        over_answer_only: bool,
    },
    /// Cancel the turn in flight: LLM stream, pending tools, output.
    Interrupt,
    /// Swap persona, voice, model, plugins and memory space.
    SwitchProfile { path: String },
    /// Finish the current turn's bookkeeping and stop the session.
    Shutdown,
    /// The user muted or unmuted the microphone. While muted the character never speaks up on its own.
    SetMicMuted { muted: bool },
    /// Half-duplex: the microphone is ignored while the character speaks (no talking over it). Off,
    /// the user's words interrupt the character (echo cancellation keeps it from hearing itself).
    SetHalfDuplex { enabled: bool },
    /// Do-not-disturb: no proactive turns while enabled (the user can still talk).
    SetDoNotDisturb { enabled: bool },
    /// Ask for a proactive turn (schedulers ask the same way). Started only when the session is idle,
    /// quiet, unmuted and not in do-not-disturb; otherwise answered with `proactive_skipped`.
    ProactiveTurn { reason: String },
    /// Listen only while the push-to-talk control is held (`true`), or whenever the user speaks.
    SetPushToTalk { enabled: bool },
    /// The push-to-talk control was pressed or released (ignored unless push-to-talk is on).
    PushToTalk { pressed: bool },
    /// The front end around the session (microphone, speakers, model installer) has something to tell
    /// every client, e.g. "microphone lost; retrying". The session relays it as a `notice` event.
    Notice { level: NoticeLevel, message: String },
    /// Ask a sensor what it could watch (answered with `sensor_targets`).
    ListSensorTargets { plugin: String },
    /// Use another LLM from now on (the settings' presets). `engine: "embedded"` is the brain on this
    /// computer (`model` names an installed embedded model; `base_url` and `api_key_env` must be empty:
    /// it has its own address and token). Otherwise `base_url` is an OpenAI-compatible endpoint. The key
    /// is never sent: `api_key_env` names an environment variable of the Tomo process that holds it (its
    /// name must end in `API_KEY`); without it the current key stays, for the endpoint it was set for.
    SetLlm {
        #[serde(default)]
        engine: LlmEngineKind,
        #[serde(default)]
        base_url: String,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_env: Option<String>,
    },
    /// Start or stop a sensor plugin; `target` chooses what it watches (e.g. a window title pattern).
    SetSensor {
        plugin: String,
        enabled: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// The user's answer to `approval_requested` `id`. A command allowed is remembered (and its plugin
    /// started at once); a tool call allowed runs once.
    Approve { id: u64, allow: bool },
}

/// What the user is asked to allow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalRequest {
    /// A plugin wants to start a program (its MCP server) that was never allowed on this installation.
    /// Until allowed the plugin stays off; the answer is remembered for exactly this command.
    RunCommand {
        plugin: String,
        /// The exact command line that would run.
        command: String,
        /// Names of the variables it would be given (the rest of the environment is withheld).
        env: Vec<String>,
        /// The manifest that declares it.
        manifest: String,
    },
    /// A tool with side effects (marked `confirm = true`) wants to run with these arguments.
    ToolCall {
        plugin: String,
        tool_name: String,
        args: serde_json::Value,
        /// No answer within this time counts as no.
        timeout_ms: u64,
    },
}

/// What thinks for the character: the embedded brain on this computer, or an OpenAI-compatible endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum LlmEngineKind {
    /// An OpenAI-compatible endpoint at a base URL (Ollama, LM Studio, a cloud API).
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
    /// The brain that ships with Tomo (llama.cpp on this computer).
    Embedded,
}

/// A rectangle in the sensor's coordinates (for the screen watcher: pixels of the watched window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Region {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

/// Something a sensor noticed, e.g. new text on the watched game window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Observation {
    /// The sensor plugin that made it (e.g. `screen_watch`).
    pub source: String,
    /// When it was made, unix milliseconds.
    pub at_ms: i64,
    /// What was watched (window title, monitor name, ...).
    pub window: String,
    /// The new or changed text.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
}

/// How much a notice matters to the user.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// Something a sensor can watch (for the screen watcher: a window), offered to the user to pick from.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SensorTarget {
    /// What `set_sensor`'s `target` should say to pick it (the window title).
    pub title: String,
    /// A hint for the user (the application), possibly empty.
    #[serde(default)]
    pub detail: String,
    pub width: u32,
    pub height: u32,
}

/// What a sensor is doing, as shown in the UI (the privacy indicator reads `watching`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum SensorState {
    Watching {
        target: String,
    },
    /// Nothing to watch right now (window gone or minimised, permission missing, ...); retrying.
    Waiting {
        reason: String,
    },
    Stopped,
    Error {
        message: String,
    },
}

/// Why a proactive turn was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ProactiveSkip {
    /// A turn is running or its output is still playing.
    Busy,
    /// The user is speaking.
    Listening,
    MicMuted,
    DoNotDisturb,
}

/// Conversation states, owned by the session coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    Idle,
    Listening,
    Thinking,
    Speaking,
}

/// Lifecycle of one tool call as seen by clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Running,
    Completed,
    Error,
}

/// A tool call as a structured event: emitted `Running` for every call of a round before any runs,
/// then once more `Completed` or `Error` with the result text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolCallEvent {
    pub tool_id: String,
    pub tool_name: String,
    /// Arguments as parsed JSON when they parse, else the raw string the model sent.
    pub args: serde_json::Value,
    pub status: ToolStatus,
    /// The text given back to the model (`None` while running).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub result: Option<String>,
    /// The 1-based round of the agent loop this call belongs to.
    pub round: u32,
}

/// Something the character does while saying a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// An `[emotion]` tag that names a key of the profile's emotion map.
    Emotion { name: String },
    /// A `[key:value]` tag that a plugin of the character reads (e.g. mood_chat's `[mood:+10]`). Never
    /// shown or spoken; the plugin sees it with the sentence among the session's events.
    Tag { key: String, value: String },
}

/// One sentence out of the token pipeline, ready for display and speech.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Sentence {
    /// 0-based position within its turn.
    pub index: u32,
    /// What the UI shows (tags removed; `<think>` only when the profile asks; roleplay narration such as
    /// `*smiles*` kept as written).
    pub display_text: String,
    /// What TTS speaks; `None` when nothing in the sentence is speakable.
    pub tts_text: Option<String>,
    pub actions: Vec<Action>,
    /// `display_text` part by part with narration and emphasis marked (their `*`/brackets removed), when
    /// it has any; empty means all of it is speech.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub display_spans: Vec<DisplaySpan>,
}

/// A part of a sentence as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DisplaySpan {
    pub text: String,
    pub style: SpanStyle,
}

/// How a part of a sentence is meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum SpanStyle {
    /// Said aloud.
    Speech,
    /// Roleplay narration or a stage direction (`*smiles*`, `(laughs)`, `[sighs]`): shown, never spoken.
    Narration,
    /// A stressed word inside speech (`I *really* mean it`): spoken.
    Emphasis,
}

/// Why a turn ended normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without asking for more tools.
    Completed,
    /// The model still wanted tools after the last allowed round; the answer so far is kept.
    RoundLimit,
}

/// What a latency report measures from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum LatencyOrigin {
    SpeechEnd,
    TurnStart,
}

/// Which lifecycle hook a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum HookStage {
    BeforeTurn,
    AfterTurn,
    AfterPlayback,
}

/// Machine-readable error categories for clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    LlmUnreachable,
    LlmHttp,
    LlmStream,
    LlmMalformed,
    Tool,
    Hook,
    Profile,
    Plugin,
    History,
    Output,
    IllegalState,
    Internal,
    /// A client's frame was refused (bad JSON, an op clients may not send, a profile outside the
    /// profiles folder).
    InvalidOp,
}

/// Why an answer stopped by speech over it went on (see `Op::SpeechOverAnswer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ResumeReason {
    /// No words were recognised (a cough, a click, breath).
    NoWords,
    /// Only a listening sound or an acknowledgement ("mm-hm", "uh-huh", "yeah", "嗯", "うん").
    Backchannel,
    /// The words were the character's own (what the echo canceller left of its voice).
    OwnVoice,
    /// The speech stopped when the character went quiet, and was no request to stop: most likely what
    /// the echo canceller let through of the character's voice.
    OnlyOverAnswer,
    /// No words came within the time an answer is held for.
    TimedOut,
}

/// Events a session emits, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session is ready (after start or a profile switch).
    SessionReady {
        character: String,
        agent_id: String,
        tools: Vec<String>,
    },
    StateChanged {
        from: SessionState,
        to: SessionState,
    },
    TurnStarted {
        turn_id: TurnId,
        user_text: String,
    },
    /// What ASR heard (voice turns only), before the turn starts.
    UserTranscript {
        text: String,
    },
    /// Where the time went in one turn, in milliseconds from `origin` (end of user speech for voice turns,
    /// the turn's start for typed ones). A step that did not happen is `null`.
    LatencyReport {
        turn_id: TurnId,
        origin: LatencyOrigin,
        /// When the end of the turn was decided (voice turns; the silence waited after the last word).
        #[serde(default)]
        end_of_turn_ms: Option<u64>,
        asr_done_ms: Option<u64>,
        first_token_ms: Option<u64>,
        first_sentence_ms: Option<u64>,
        first_audio_ms: Option<u64>,
    },
    /// Raw assistant text as it streams (display-side clients may show it before sentences complete).
    TextDelta {
        turn_id: TurnId,
        delta: String,
    },
    /// Model reasoning, only emitted when the profile asks to show it.
    ReasoningDelta {
        turn_id: TurnId,
        delta: String,
    },
    Sentence {
        turn_id: TurnId,
        sentence: Sentence,
    },
    ToolCall {
        turn_id: TurnId,
        call: ToolCallEvent,
    },
    /// A hook failed or timed out; the turn went on without it.
    HookFailed {
        turn_id: TurnId,
        hook: String,
        stage: HookStage,
        message: String,
    },
    TurnFinished {
        turn_id: TurnId,
        end: TurnEnd,
        /// The complete assistant text of the turn (all rounds).
        text: String,
    },
    TurnAborted {
        turn_id: TurnId,
        /// What the assistant had said before the interrupt; kept in history, marked interrupted.
        partial_text: String,
    },
    /// A sentence's audio started playing. `envelope` is its loudness for lip sync: RMS per `frame_ms`
    /// frame, normalised so the loudest frame of the sentence is 1.0.
    AudioStarted {
        turn_id: TurnId,
        sentence_index: u32,
        duration_ms: u32,
        frame_ms: u32,
        envelope: Vec<f32>,
        actions: Vec<Action>,
    },
    /// A sentence's audio finished playing (its last sample went to the device).
    AudioFinished {
        turn_id: TurnId,
        sentence_index: u32,
    },
    /// The output sink has delivered the last sentence of the turn (audio: the last sample played).
    PlaybackDrained {
        turn_id: TurnId,
    },
    /// The user started talking over the answer (`speech_over_answer`): its audio stopped where it was
    /// and waits for their words. Followed by `answer_resumed`, or by `turn_aborted` if they were words.
    AnswerHeld {
        turn_id: TurnId,
    },
    /// What the user said over the answer was not meant to stop it: the audio goes on where it stopped.
    AnswerResumed {
        turn_id: TurnId,
        why: ResumeReason,
    },
    /// Something failed; the session goes on (an error event never ends it).
    Error {
        code: ErrorCode,
        message: String,
        /// `true`: only this attempt failed (a turn, an op, a sentence); the next one starts afresh.
        /// `false`: what failed stays off until something changes — a plugin that did not load, a voice
        /// that did not switch, a sensor that is not running.
        recoverable: bool,
    },
    /// Microphone mute or do-not-disturb changed (after `set_mic_muted` / `set_do_not_disturb`).
    ModeChanged {
        mic_muted: bool,
        do_not_disturb: bool,
        /// The microphone listens only while push-to-talk is held.
        #[serde(default)]
        push_to_talk: bool,
        /// The microphone is ignored while the character speaks.
        #[serde(default)]
        half_duplex: bool,
    },
    /// Push-to-talk pressed or released: the microphone front end starts or ends an utterance.
    PushToTalk {
        pressed: bool,
    },
    /// A sensor noticed something.
    Observation(Observation),
    /// A readable notice from the front end (devices, models), for every client to show.
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// What a sensor could watch (after `list_sensor_targets`).
    SensorTargets {
        plugin: String,
        targets: Vec<SensorTarget>,
    },
    /// A sensor's state changed.
    SensorStatus {
        plugin: String,
        #[serde(flatten)]
        state: SensorState,
    },
    /// The character speaks up on its own: the turn `turn_id` that follows is proactive.
    Proactive {
        turn_id: TurnId,
        reason: String,
    },
    /// A proactive turn was asked for and not started.
    ProactiveSkipped {
        reason: String,
        why: ProactiveSkip,
    },
    /// The session now talks to this LLM endpoint (after `set_llm`).
    LlmChanged {
        /// The embedded brain or an endpoint (absent from older servers: an endpoint).
        #[serde(default)]
        engine: LlmEngineKind,
        /// For the embedded brain, its loopback address (it changes with every run).
        base_url: String,
        model: String,
    },
    /// A plugin's state changed (e.g. mood_chat: the character's mood), for the UI to show.
    PluginState {
        plugin: String,
        state: PluginState,
    },
    /// The user is asked to allow something; answer with the `approve` op and this `id`.
    ApprovalRequested {
        id: u64,
        request: ApprovalRequest,
    },
    /// Request `id` was answered (by any client, the terminal, or a timeout): every client drops its
    /// prompt.
    ApprovalResolved {
        id: u64,
        allowed: bool,
    },
}

/// What a plugin reports about itself for the UI: a short label and an optional level, e.g.
/// mood_chat's `{ label: "mood", value: 82 }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PluginState {
    pub label: String,
    /// A level to show beside the label (mood: 0-100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f32>,
    /// Why it changed, in words.
    #[serde(default)]
    pub reason: String,
}

/// An event plus its per-session sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EventEnvelope {
    pub seq: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// Frames a server sends a client besides session events. They carry no `seq`: they are about the
/// connection, not the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// A frame this client sent was refused; the connection stays open.
    Error {
        code: ErrorCode,
        message: String,
        recoverable: bool,
    },
    /// The client asked for events older than the replay buffer keeps: `missed_from..=missed_to` are
    /// gone (it should reset its view). The oldest kept events follow, then live ones.
    ReplayGap { missed_from: u64, missed_to: u64 },
    /// The client's `last_seq` is newer than anything this server emitted: it talked to an earlier
    /// process. The whole buffer follows, as for a new client.
    SessionReset { latest_seq: u64 },
}
