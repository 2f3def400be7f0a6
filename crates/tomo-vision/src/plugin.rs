//! The `screen_watch` sensor plugin: tomo-core's [`Sensor`] contract on top of [`ScreenWatcher`].
//!
//! The watcher runs on its own threads and reports through a std channel; one blocking forwarder per
//! watcher turns those reports into [`SensorOutput`]s for the session. Starting (loading the OCR models)
//! and stopping (joining the threads, which may wait for an OCR pass) block, so both run off the async
//! threads.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tomo_config::manifest::PluginManifest;
use tomo_plugin_api::sensor::{Sensor, SensorCommand, SensorOutput};
use tomo_plugin_api::{FactoryContext, PluginFactory};
use tomo_plugin_api::{PluginError, PluginParts, parse_config};
use tomo_protocol::{Observation, Region, SensorState, SensorTarget};

use crate::ocr::OcrModels;
use crate::watcher::{ScreenWatcher, WatchConfig, WatchHandle, WatchOutput, WatchStatus};

pub const PLUGIN_ID: &str = "screen_watch";

/// `[plugins.screen_watch]` (defaults in `plugins/screen_watch/plugin.toml`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenWatchConfig {
    /// Title pattern of the window to watch; empty: wait until the user picks one.
    pub window_title: String,
    pub fps: f32,
    pub force_every_s: f32,
    pub monitor_fallback: bool,
    pub languages: Vec<String>,
}

impl ScreenWatchConfig {
    fn watch_config(&self, target: Option<String>) -> WatchConfig {
        let title = target.or_else(|| Some(self.window_title.clone()).filter(|t| !t.is_empty()));
        WatchConfig {
            window_title: title,
            fps: self.fps,
            force_every_s: self.force_every_s,
            monitor_fallback: self.monitor_fallback,
            languages: self.languages.clone(),
            ..WatchConfig::default()
        }
    }

    /// Something to watch without the user picking a window first.
    fn has_target(&self) -> bool {
        !self.window_title.trim().is_empty() || self.monitor_fallback
    }
}

/// Registers `screen_watch` with a session; `models_root` is the model store with the PP-OCR models.
pub struct ScreenWatchFactory {
    pub models_root: PathBuf,
}

impl PluginFactory for ScreenWatchFactory {
    fn id(&self) -> &str {
        PLUGIN_ID
    }

    fn instantiate<'a>(
        &'a self,
        _manifest: &'a PluginManifest,
        config: &'a toml::Table,
        _ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        Box::pin(async move {
            let config: ScreenWatchConfig = parse_config(PLUGIN_ID, config)?;
            // Refuse a bad rate, language or title regex now, naming the field, rather than at the first
            // Start. (An empty title is fine: the user picks the window later.)
            let probe = config.watch_config(Some(config.window_title.clone()));
            crate::watcher::validate(&probe)
                .and_then(|()| {
                    if config.window_title.trim().is_empty() {
                        return Ok(());
                    }
                    crate::target::TitlePattern::parse(&config.window_title)
                        .map(drop)
                        .map_err(Into::into)
                })
                .map_err(|error| PluginError::Config {
                    plugin: PLUGIN_ID.to_owned(),
                    field: error_field(&error),
                    message: error.to_string(),
                })?;
            let sensor = ScreenWatchSensor {
                config,
                models: OcrModels::in_store(&self.models_root),
            };
            Ok(PluginParts {
                sensors: vec![Arc::new(sensor)],
                ..PluginParts::default()
            })
        })
    }
}

fn error_field(error: &crate::watcher::WatchError) -> String {
    match error {
        crate::watcher::WatchError::Config { field, .. } => (*field).to_owned(),
        crate::watcher::WatchError::Target(_) => "window_title".to_owned(),
        _ => "(config)".to_owned(),
    }
}

pub struct ScreenWatchSensor {
    config: ScreenWatchConfig,
    models: OcrModels,
}

impl Sensor for ScreenWatchSensor {
    fn run(
        self: Arc<Self>,
        mut commands: mpsc::Receiver<SensorCommand>,
        out: mpsc::Sender<SensorOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let mut running: Option<WatchHandle> = None;
            if self.config.has_target() {
                running = self.start(None, &out).await;
            } else {
                let _ = out.send(SensorOutput::Status(SensorState::Stopped)).await;
            }
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    command = commands.recv() => match command {
                        None => break,
                        Some(SensorCommand::Start { target }) => match (&running, target) {
                            // Already watching: switch windows without reloading the models.
                            (Some(handle), Some(target)) => {
                                if let Err(error) = handle.retarget(&target) {
                                    let message = error.to_string();
                                    let _ = out.send(SensorOutput::Status(SensorState::Error { message })).await;
                                }
                            }
                            (Some(_), None) => {}
                            (None, target) => running = self.start(target, &out).await,
                        },
                        Some(SensorCommand::Stop) => {
                            if let Some(handle) = running.take() {
                                stop(handle).await;
                            }
                        }
                        Some(SensorCommand::ListTargets) => {
                            let _ = out.send(SensorOutput::Targets(windows().await)).await;
                        }
                    },
                }
            }
            if let Some(handle) = running.take() {
                stop(handle).await;
            }
        })
    }
}

impl ScreenWatchSensor {
    async fn start(
        &self,
        target: Option<String>,
        out: &mpsc::Sender<SensorOutput>,
    ) -> Option<WatchHandle> {
        if let Some(missing) = self.models.missing() {
            let message = format!(
                "the OCR model {} is not installed (run `tomo models install ppocr-v4`)",
                missing.display()
            );
            let _ = out
                .send(SensorOutput::Status(SensorState::Error { message }))
                .await;
            return None;
        }
        let config = self.config.watch_config(target);
        if config.window_title.is_none() && !config.monitor_fallback {
            let reason = "no window chosen: pick one to watch".to_owned();
            let _ = out
                .send(SensorOutput::Status(SensorState::Waiting { reason }))
                .await;
            return None;
        }
        let models = self.models.clone();
        let started =
            tokio::task::spawn_blocking(move || ScreenWatcher::start(config, &models)).await;
        let (handle, reports) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(error)) => {
                let message = error.to_string();
                let _ = out
                    .send(SensorOutput::Status(SensorState::Error { message }))
                    .await;
                return None;
            }
            Err(join) => {
                let message = format!("the screen watcher could not start: {join}");
                let _ = out
                    .send(SensorOutput::Status(SensorState::Error { message }))
                    .await;
                return None;
            }
        };
        let out = out.clone();
        // Ends when the watcher is stopped (its senders drop) or the session is gone.
        tokio::task::spawn_blocking(move || {
            while let Ok(report) = reports.recv() {
                if out.blocking_send(to_sensor_output(report)).is_err() {
                    break;
                }
            }
        });
        Some(handle)
    }
}

/// The windows the user can pick, biggest first (the game is usually the big one); no windows (no window
/// manager, capture not permitted) is an empty list, with the reason in the log.
async fn windows() -> Vec<SensorTarget> {
    let listed = tokio::task::spawn_blocking(crate::target::list_windows).await;
    let mut windows = match listed {
        Ok(Ok(windows)) => windows,
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot list windows");
            return Vec::new();
        }
        Err(join) => {
            tracing::warn!(%join, "listing windows crashed");
            return Vec::new();
        }
    };
    windows.retain(|w| !w.title.trim().is_empty() && w.width > 0 && w.height > 0);
    windows.sort_by_key(|w| std::cmp::Reverse(u64::from(w.width) * u64::from(w.height)));
    windows
        .into_iter()
        .map(|w| SensorTarget {
            title: w.title,
            detail: w.app_name,
            width: w.width,
            height: w.height,
        })
        .collect()
}

async fn stop(handle: WatchHandle) {
    let stats = tokio::task::spawn_blocking(move || handle.stop()).await;
    if let Ok(stats) = stats {
        tracing::info!(?stats, "screen watcher stopped");
    }
}

fn to_sensor_output(report: WatchOutput) -> SensorOutput {
    match report {
        WatchOutput::Status(WatchStatus::Watching { window }) => {
            SensorOutput::Status(SensorState::Watching { target: window })
        }
        WatchOutput::Status(WatchStatus::WaitingForWindow { reason }) => {
            SensorOutput::Status(SensorState::Waiting { reason })
        }
        WatchOutput::Status(WatchStatus::Stopped) => SensorOutput::Status(SensorState::Stopped),
        WatchOutput::Observation(seen) => SensorOutput::Observation(Observation {
            source: PLUGIN_ID.to_owned(),
            at_ms: i64::try_from(seen.at_ms).unwrap_or(i64::MAX),
            window: seen.window,
            text: seen.text,
            region: Some(Region {
                x: i32::try_from(seen.region.x).unwrap_or(i32::MAX),
                y: i32::try_from(seen.region.y).unwrap_or(i32::MAX),
                width: seen.region.width,
                height: seen.region.height,
            }),
        }),
    }
}
