//! Fake sensors and schedulers, a scripted wall clock, and a plugins dir/profile for proactive tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tomo_config::manifest::PluginManifest;
use tomo_core::session::Environment;
use tomo_plugin_api::scheduler::{
    Clock, ProactiveRequest, Scheduler, SchedulerContext, SchedulerRequest,
};
use tomo_plugin_api::sensor::{Sensor, SensorCommand, SensorOutput};
use tomo_plugin_api::{FactoryContext, PluginFactory};
use tomo_plugin_api::{PluginError, PluginParts};
use tomo_protocol::{Event, Observation, SensorState};

use super::session::environment;

pub const T0: i64 = 1_800_000_000_000;

pub struct ScriptedClock(pub AtomicI64);

impl Clock for ScriptedClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Hands out fixed parts for one plugin id.
pub struct Parts(pub &'static str, pub PluginParts);

impl PluginFactory for Parts {
    fn id(&self) -> &str {
        self.0
    }
    fn instantiate<'a>(
        &'a self,
        _manifest: &'a PluginManifest,
        _config: &'a toml::Table,
        _ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        let parts = self.1.clone();
        Box::pin(async move { Ok(parts) })
    }
}

/// Reports `watching Game`, the given observations, then obeys commands and records them.
pub struct FakeSensor {
    pub observations: Vec<Observation>,
    pub commands: Arc<Mutex<Vec<SensorCommand>>>,
}

impl Sensor for FakeSensor {
    fn run(
        self: Arc<Self>,
        mut commands: mpsc::Receiver<SensorCommand>,
        out: mpsc::Sender<SensorOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let watching = |target: &str| {
                SensorOutput::Status(SensorState::Watching {
                    target: target.to_owned(),
                })
            };
            let _ = out.send(watching("Game")).await;
            for o in &self.observations {
                let _ = out.send(SensorOutput::Observation(o.clone())).await;
            }
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    Some(command) = commands.recv() => {
                        self.commands.lock().unwrap().push(command.clone());
                        let status = match command {
                            SensorCommand::Start { target } => watching(target.as_deref().unwrap_or("Game")),
                            SensorCommand::Stop => SensorOutput::Status(SensorState::Stopped),
                            SensorCommand::ListTargets => SensorOutput::Targets(Vec::new()),
                        };
                        let _ = out.send(status).await;
                    }
                }
            }
        })
    }
}

/// Records what it sees; asks for a proactive turn at each observation.
pub struct SpyScheduler {
    pub seen: Arc<Mutex<Vec<Event>>>,
}

impl Scheduler for SpyScheduler {
    fn run(self: Arc<Self>, mut ctx: SchedulerContext) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            loop {
                tokio::select! {
                    () = ctx.cancel.cancelled() => break,
                    event = ctx.events.recv() => {
                        let Some(event) = event else { break };
                        if let Event::Observation(o) = &event {
                            let _ = ctx.requests.send(SchedulerRequest::Proactive(ProactiveRequest {
                                reason: format!("screen changed in {}", o.window),
                                share_observations_with_cloud: false,
                            }));
                        }
                        self.seen.lock().unwrap().push(event);
                    }
                }
            }
        })
    }
}

pub fn observation(text: &str) -> Observation {
    Observation {
        source: "fake_sensor".into(),
        at_ms: T0,
        window: "Game".into(),
        text: text.into(),
        region: None,
    }
}

/// A plugins dir with manifests for the fakes and the repository's real `mood_chat` / `screen_watch`.
pub fn plugins_dir(root: &Path) -> PathBuf {
    let dir = root.join("plugins");
    for (id, kind) in [("fake_sensor", "sensor"), ("spy", "scheduler")] {
        std::fs::create_dir_all(dir.join(id)).unwrap();
        std::fs::write(
            dir.join(id).join("plugin.toml"),
            format!("[plugin]\nid = \"{id}\"\ntype = \"{kind}\"\ndescription = \"test\"\n"),
        )
        .unwrap();
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins");
    for id in ["mood_chat", "screen_watch"] {
        std::fs::create_dir_all(dir.join(id)).unwrap();
        std::fs::copy(
            repo.join(id).join("plugin.toml"),
            dir.join(id).join("plugin.toml"),
        )
        .unwrap();
    }
    dir
}

pub fn write_profile(root: &Path, base_url: &str, enabled: &[&str], extra: &str) -> PathBuf {
    let path = root.join("kuma.toml");
    let enabled: Vec<String> = enabled.iter().map(|e| format!("\"{e}\"")).collect();
    let text = format!(
        r#"[character]
name = "Kuma"
agent_id = "kuma"
persona = "You are Kuma, a test character."

[llm]
base_url = "{base_url}"
model = "scripted-model"

[live2d.emotion_map]
joy = "f01"
sad = "f03"

[plugins]
enabled = [{}]
{extra}
"#,
        enabled.join(", ")
    );
    std::fs::write(&path, text).unwrap();
    path
}

pub fn env_with(root: &Path, factories: Vec<Arc<dyn PluginFactory>>) -> Environment {
    let mut env = environment(root, vec![]);
    env.plugins_dir = plugins_dir(root);
    // The test's factories first: they replace built-ins of the same id.
    env.plugin_factories = factories
        .into_iter()
        .chain(tomo_plugins::builtin_factories())
        .collect();
    env
}

/// Runs until cancelled, then says so.
pub struct CancelProbe(pub Arc<Mutex<Vec<&'static str>>>);

impl Sensor for CancelProbe {
    fn run(
        self: Arc<Self>,
        _commands: mpsc::Receiver<SensorCommand>,
        _out: mpsc::Sender<SensorOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.0.lock().unwrap().push("sensor started");
            cancel.cancelled().await;
            self.0.lock().unwrap().push("sensor cancelled");
        })
    }
}

impl Scheduler for CancelProbe {
    fn run(self: Arc<Self>, ctx: SchedulerContext) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.0.lock().unwrap().push("scheduler started");
            ctx.cancel.cancelled().await;
            self.0.lock().unwrap().push("scheduler cancelled");
        })
    }
}
