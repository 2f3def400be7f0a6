//! The running sensors and schedulers of one character. They start with the character and are cancelled
//! when its profile is switched away or the session shuts down. Their output reaches the coordinator as
//! [`PluginMsg`]s on one channel, so the coordinator stays the one owner of state and event order.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::character::Character;
use tomo_plugin_api::scheduler::{SchedulerContext, SchedulerRequest, scheduler_sees};
use tomo_plugin_api::sensor::{SensorCommand, SensorOutput};
use tomo_protocol::Event;

/// How long a cancelled plugin task may take to wrap up before it is aborted.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What a plugin task tells the coordinator.
#[derive(Debug)]
pub(crate) enum PluginMsg {
    Sensor {
        plugin: String,
        output: SensorOutput,
    },
    Scheduler {
        plugin: String,
        request: SchedulerRequest,
    },
}

#[derive(Default)]
pub(crate) struct PluginTasks {
    cancel: CancellationToken,
    sensors: Vec<(String, mpsc::Sender<SensorCommand>)>,
    schedulers: Vec<mpsc::UnboundedSender<Event>>,
    tasks: Vec<JoinHandle<()>>,
}

impl PluginTasks {
    pub(crate) fn start(character: &Character, tx: &mpsc::UnboundedSender<PluginMsg>) -> Self {
        let mut this = Self::default();
        for (plugin, sensor) in &character.sensors {
            let (cmd_tx, cmd_rx) = mpsc::channel(16);
            let (out_tx, mut out_rx) = mpsc::channel(64);
            let run = std::sync::Arc::clone(sensor).run(cmd_rx, out_tx, this.cancel.child_token());
            this.tasks.push(tokio::spawn(run));
            let (tx, plugin_id) = (tx.clone(), plugin.clone());
            this.tasks.push(tokio::spawn(async move {
                while let Some(output) = out_rx.recv().await {
                    let msg = PluginMsg::Sensor {
                        plugin: plugin_id.clone(),
                        output,
                    };
                    if tx.send(msg).is_err() {
                        break;
                    }
                }
            }));
            this.sensors.push((plugin.clone(), cmd_tx));
        }
        for (plugin, scheduler) in &character.schedulers {
            let (events_tx, events_rx) = mpsc::unbounded_channel();
            let (req_tx, mut req_rx) = mpsc::unbounded_channel();
            let ctx = SchedulerContext {
                events: events_rx,
                requests: req_tx,
                data_dir: character.data_dir.clone(),
                agent_id: character.agent_id().to_owned(),
                cancel: this.cancel.child_token(),
            };
            this.tasks
                .push(tokio::spawn(std::sync::Arc::clone(scheduler).run(ctx)));
            let (tx, plugin_id) = (tx.clone(), plugin.clone());
            this.tasks.push(tokio::spawn(async move {
                while let Some(request) = req_rx.recv().await {
                    let msg = PluginMsg::Scheduler {
                        plugin: plugin_id.clone(),
                        request,
                    };
                    if tx.send(msg).is_err() {
                        break;
                    }
                }
            }));
            this.schedulers.push(events_tx);
        }
        this
    }

    /// Shows a session event to every scheduler that wants it.
    pub(crate) fn forward(&mut self, event: &Event) {
        if self.schedulers.is_empty() || !scheduler_sees(event) {
            return;
        }
        // A scheduler that ended dropped its receiver; forget it.
        self.schedulers.retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// Sends `command` to the sensor of `plugin`.
    pub(crate) fn command(
        &self,
        plugin: &str,
        command: SensorCommand,
    ) -> Result<(), SensorCommandError> {
        let Some((_, tx)) = self.sensors.iter().find(|(id, _)| id == plugin) else {
            let running: Vec<&str> = self.sensors.iter().map(|(id, _)| id.as_str()).collect();
            return Err(SensorCommandError::NotRunning {
                plugin: plugin.to_owned(),
                running: if running.is_empty() {
                    "none".to_owned()
                } else {
                    running.join(", ")
                },
            });
        };
        tx.try_send(command)
            .map_err(|error| SensorCommandError::Busy {
                plugin: plugin.to_owned(),
                reason: error.to_string(),
            })
    }

    /// Cancels every task and waits for them (aborting any that do not stop in time).
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        for mut task in self.tasks {
            if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
                tracing::warn!("a plugin task did not stop when cancelled; aborting it");
                task.abort();
            }
        }
    }
}

/// Why a sensor command (start, stop, list targets) was not delivered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SensorCommandError {
    #[error("no sensor plugin `{plugin}` is running (running: {running})")]
    NotRunning { plugin: String, running: String },
    #[error("sensor `{plugin}` is not taking commands: {reason}")]
    Busy { plugin: String, reason: String },
}

impl SensorCommandError {
    /// A busy sensor may take the next command; a plugin that is not running will not appear by itself.
    pub(crate) fn is_recoverable(&self) -> bool {
        match self {
            Self::NotRunning { .. } => false,
            Self::Busy { .. } => true,
        }
    }
}
