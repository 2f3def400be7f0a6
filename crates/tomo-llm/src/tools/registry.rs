//! The tool registry: argument validation against each tool's JSON Schema, then execution with a timeout,
//! retries for transient failures, cancellation, and panic isolation (a tool runs in its own task).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Tool, ToolContext, ToolError};
use crate::ToolDefinition;

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    #[error("tool name `{0}` is invalid: use 1-64 letters, digits, `_` or `-`")]
    InvalidName(String),
    #[error("two tools are named `{0}`")]
    Duplicate(String),
    #[error("tool `{name}` has an invalid JSON Schema: {message}")]
    InvalidSchema { name: String, message: String },
}

#[derive(Clone)]
struct Registered {
    tool: Arc<dyn Tool>,
    validator: Arc<jsonschema::Validator>,
}

/// The outcome of one call: the arguments as understood, and the result text or error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolExecution {
    /// Parsed arguments, or the raw string when it was not JSON.
    pub args: Value,
    pub result: Result<String, ToolError>,
    /// How many attempts were made (1 when it worked the first time).
    pub attempts: u32,
}

#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        let name = spec.name.clone();
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(RegistryError::InvalidName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let validator = jsonschema::validator_for(&spec.parameters).map_err(|e| {
            RegistryError::InvalidSchema {
                name: name.clone(),
                message: e.to_string(),
            }
        })?;
        let validator = Arc::new(validator);
        self.tools.insert(name, Registered { tool, validator });
        Ok(())
    }

    /// The tools whose spec passes `keep`, sharing the same tools (a turn that must not offer some).
    pub fn filtered(&self, keep: impl Fn(&super::ToolSpec) -> bool) -> Self {
        Self {
            tools: self
                .tools
                .iter()
                .filter(|(_, r)| keep(r.tool.spec()))
                .map(|(name, r)| (name.clone(), r.clone()))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The `tools` array for the chat request.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|r| {
                let spec = r.tool.spec();
                ToolDefinition::function(&spec.name, &spec.description, spec.parameters.clone())
            })
            .collect()
    }

    /// Validates and runs one call. Never panics and never hangs past the tool's timeout × attempts.
    pub async fn execute(&self, name: &str, raw_args: &str, ctx: ToolContext) -> ToolExecution {
        let parsed: Result<Value, _> = serde_json::from_str(raw_args);
        let args = match &parsed {
            Ok(value) => value.clone(),
            Err(_) => Value::String(raw_args.to_owned()),
        };
        let Some(registered) = self.tools.get(name) else {
            return ToolExecution {
                args,
                result: Err(ToolError::UnknownTool(name.to_owned())),
                attempts: 0,
            };
        };
        let args_value = match parsed {
            Ok(value) => value,
            Err(e) => {
                return ToolExecution {
                    args,
                    result: Err(ToolError::InvalidArguments(format!(
                        "arguments are not valid JSON ({e}); send a JSON object matching the schema"
                    ))),
                    attempts: 0,
                };
            }
        };
        let problems: Vec<String> = registered
            .validator
            .iter_errors(&args_value)
            .map(|error| {
                let path = error.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("at `{at}`: {error}")
            })
            .collect();
        if !problems.is_empty() {
            return ToolExecution {
                args,
                result: Err(ToolError::InvalidArguments(problems.join("; "))),
                attempts: 0,
            };
        }
        let (result, attempts) =
            run_with_retries(Arc::clone(&registered.tool), args_value, ctx).await;
        let spec = registered.tool.spec();
        let max = spec.max_output_bytes;
        let result = match result {
            Ok(text) if spec.untrusted_output => Ok(super::frame_untrusted(
                &format!("the `{name}` tool"),
                &super::truncate_output(text, max),
            )),
            Ok(text) => Ok(super::truncate_output(text, max)),
            Err(ToolError::Failed { message, retryable }) => Err(ToolError::Failed {
                message: super::truncate_output(message, max),
                retryable,
            }),
            Err(other) => Err(other),
        };
        ToolExecution {
            args,
            result,
            attempts,
        }
    }
}

async fn run_with_retries(
    tool: Arc<dyn Tool>,
    args: Value,
    ctx: ToolContext,
) -> (Result<String, ToolError>, u32) {
    let spec = tool.spec().clone();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = run_once(Arc::clone(&tool), args.clone(), ctx.clone(), spec.timeout).await;
        match result {
            Err(error) if error.is_retryable() && attempt <= spec.retries => {
                tracing::warn!(tool = %spec.name, attempt, %error, "tool failed, retrying");
                let backoff = Duration::from_millis(200 * u64::from(attempt));
                tokio::select! {
                    () = ctx.cancel.cancelled() => return (Err(ToolError::Cancelled), attempt),
                    () = tokio::time::sleep(backoff) => {}
                }
            }
            other => return (other, attempt),
        }
    }
}

async fn run_once(
    tool: Arc<dyn Tool>,
    args: Value,
    ctx: ToolContext,
    timeout: Duration,
) -> Result<String, ToolError> {
    let cancel = ctx.cancel.clone();
    // Its own task: a panic inside the tool becomes a JoinError instead of unwinding through the turn.
    let mut task = tokio::spawn(tool.call(args, ctx));
    let outcome = tokio::select! {
        () = cancel.cancelled() => {
            task.abort();
            return Err(ToolError::Cancelled);
        }
        joined = tokio::time::timeout(timeout, &mut task) => joined,
    };
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(join_error)) if join_error.is_panic() => {
            let payload = join_error.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(ToolError::Panicked(message))
        }
        Ok(Err(_)) => Err(ToolError::Cancelled),
        Err(_elapsed) => {
            task.abort();
            Err(ToolError::Timeout(timeout))
        }
    }
}
