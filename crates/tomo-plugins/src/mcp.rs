//! Tools from an external MCP server spoken to over its stdin/stdout.
//!
//! One child process per plugin. Every tool it lists becomes a [`Tool`] holding an `Arc` of the
//! connection, so the process lives exactly as long as any of its tools and is killed when the last one
//! is dropped (rmcp's child-process transport kills on drop; `kill_on_drop` on the command is the
//! backstop).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::watch;

use tomo_config::manifest::{McpServerConfig, PluginManifest, ToolLimits};
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};
use tomo_plugin_api::{
    FactoryContext, PluginError, PluginFactory, PluginParts, limited_spec, positive_secs,
};

/// How many trailing stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
const STDERR_LINE_MAX_CHARS: usize = 500;
/// After a failed start, how long to wait for the dying server's last stderr output.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// Serves every manifest that declares an `[mcp]` server: its tools come from that server.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpFactory;

impl PluginFactory for McpFactory {
    fn id(&self) -> &str {
        "mcp"
    }

    fn serves_mcp(&self) -> bool {
        true
    }

    fn instantiate<'a>(
        &'a self,
        manifest: &'a PluginManifest,
        _config: &'a toml::Table,
        _ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        Box::pin(async move {
            let Some(server) = &manifest.mcp else {
                return Err(PluginError::start(
                    &manifest.id,
                    "the manifest declares no [mcp] server",
                ));
            };
            let tools = connect_mcp(&manifest.id, server, &manifest.tool_limits).await?;
            Ok(PluginParts {
                tools,
                ..PluginParts::default()
            })
        })
    }
}

/// Spawns the MCP server over stdio, initializes it, lists its tools and wraps each as a [`Tool`]
/// (name = the server's tool name, parameters = its `inputSchema`, timeout/retries from `limits`).
/// The server process lives as long as any of the returned tools; it is killed when the last is dropped.
pub async fn connect_mcp(
    plugin_id: &str,
    server: &McpServerConfig,
    limits: &ToolLimits,
) -> Result<Vec<Arc<dyn Tool>>, PluginError> {
    let startup = positive_secs(
        plugin_id,
        "mcp.startup_timeout_secs",
        server.startup_timeout_secs,
    )?;
    let command = server.command.as_str();

    let mut cmd = tokio::process::Command::new(command);
    // A cleared environment: the user's keys (TOMO_LLM_API_KEY, OPENAI_API_KEY, tokens) stay with
    // Tomo unless the manifest names them in `pass_env`.
    cmd.env_clear()
        .envs(child_environment(server, std::env::vars_os()))
        .args(&server.args)
        .kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| PluginError::start(plugin_id, format!("cannot run `{command}`: {err}")))?;
    let stderr = StderrTail::capture(plugin_id, stderr);

    let handshake = async {
        let service = ().serve(transport).await.map_err(|err| err.to_string())?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|err| err.to_string())?;
        Ok::<_, String>((service, tools))
    };
    let (service, listed) = match tokio::time::timeout(startup, handshake).await {
        Ok(Ok(ready)) => ready,
        Ok(Err(reason)) => {
            stderr.wait_for_eof(STDERR_GRACE).await;
            let message = format!(
                "MCP server `{command}` did not start: {reason}{}",
                stderr.hint()
            );
            return Err(PluginError::start(plugin_id, message));
        }
        Err(_) => {
            let message = format!(
                "MCP server `{command}` did not answer within {}s{}",
                startup.as_secs_f64(),
                stderr.hint()
            );
            return Err(PluginError::start(plugin_id, message));
        }
    };

    let connection = Arc::new(Connection {
        plugin_id: plugin_id.to_owned(),
        command: command.to_owned(),
        service,
        stderr,
    });
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
    for tool in listed {
        let name = tool.name.to_string();
        if !valid_tool_name(&name) {
            // Chat APIs reject such names outright; one odd tool must not cost the plugin its others.
            tracing::warn!(plugin = plugin_id, tool = %name, "skipping MCP tool with an invalid name");
            continue;
        }
        let description = tool
            .description
            .as_deref()
            .map(str::to_owned)
            .or_else(|| tool.title.clone())
            .unwrap_or_else(|| format!("Tool `{name}` from the `{plugin_id}` MCP server"));
        let parameters = Value::Object((*tool.input_schema).clone());
        // Another program's answer (often web or file content): framed as data for the model.
        let spec = limited_spec(
            plugin_id,
            ToolSpec::new(name, description, parameters).with_untrusted_output(true),
            limits,
        )?;
        tools.push(Arc::new(McpTool {
            spec,
            connection: Arc::clone(&connection),
        }));
    }
    tracing::info!(
        plugin = plugin_id,
        command,
        tools = tools.len(),
        "MCP server ready"
    );
    Ok(tools)
}

/// Variables of Tomo's own environment every server gets: finding programs, a home, temporary files
/// and the user's language. Nothing else unless asked for.
const INHERITED: &[&str] = &["PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ"];

/// What an MCP server's environment holds: [`INHERITED`] and `LC_*` from `parent`, then the manifest's
/// `pass_env` names from `parent`, then the manifest's own `env` values.
pub fn child_environment(
    server: &McpServerConfig,
    parent: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut env: std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString> = parent
        .filter(|(name, _)| {
            name.to_str().is_some_and(|name| {
                INHERITED.contains(&name)
                    || name.starts_with("LC_")
                    || server.pass_env.iter().any(|wanted| wanted == name)
            })
        })
        .collect();
    for (name, value) in &server.env {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// The running client session; dropping it cancels the session and kills the server.
struct Connection {
    plugin_id: String,
    command: String,
    service: RunningService<RoleClient, ()>,
    stderr: StderrTail,
}

struct McpTool {
    spec: ToolSpec,
    connection: Arc<Connection>,
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>> {
        let connection = Arc::clone(&self.connection);
        let name = self.spec.name.clone();
        Box::pin(async move {
            let mut params = CallToolRequestParams::new(name);
            match args {
                Value::Object(arguments) => params = params.with_arguments(arguments),
                Value::Null => {}
                other => {
                    return Err(ToolError::InvalidArguments(format!(
                        "arguments must be a JSON object, got {other}"
                    )));
                }
            }
            // Dropping the request future (on cancel or the registry's timeout) makes rmcp send
            // `notifications/cancelled` to the server.
            let result = tokio::select! {
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                result = connection.service.call_tool(params) => result,
            };
            match result {
                Ok(result) => tool_output(result),
                Err(err) => Err(connection.call_error(err)),
            }
        })
    }
}

impl Connection {
    fn call_error(&self, err: ServiceError) -> ToolError {
        let server = format!(
            "MCP server `{}` (plugin `{}`)",
            self.command, self.plugin_id
        );
        match err {
            // The server answered with a protocol error (unknown tool, bad params): it will say the same again.
            ServiceError::McpError(data) => {
                ToolError::failed(format!("{server}: {}", data.message))
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => ToolError::failed(
                format!("{server} is no longer running{}", self.stderr.hint()),
            ),
            ServiceError::Timeout { timeout } => {
                ToolError::transient(format!("{server} did not answer within {timeout:?}"))
            }
            other => ToolError::failed(format!("{server}: {other}")),
        }
    }
}

/// Joins the text parts; non-text parts are named so the model knows something was there.
fn tool_output(result: CallToolResult) -> Result<String, ToolError> {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, .. } => {
                    format!("[binary resource: {uri}]")
                }
                _ => "[resource]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource: {}]", link.uri),
            // Content kinds newer than this code: say so rather than drop them silently.
            _ => "[unsupported content]".to_owned(),
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            "the tool reported an error".to_owned()
        } else {
            text
        };
        return Err(ToolError::failed(message));
    }
    Ok(text)
}

/// The OpenAI function-name rule, which the tool registry also enforces.
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Drains the server's stderr (a full pipe would block the server), logs it, and keeps the last lines
/// for error messages.
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    eof: watch::Receiver<bool>,
}

impl StderrTail {
    fn capture(plugin_id: &str, stderr: Option<ChildStderr>) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (eof_tx, eof) = watch::channel(stderr.is_none());
        if let Some(stderr) = stderr {
            let lines = Arc::clone(&lines);
            let plugin = plugin_id.to_owned();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    tracing::debug!(plugin = %plugin, "mcp stderr: {line}");
                    let line: String = line.chars().take(STDERR_LINE_MAX_CHARS).collect();
                    let mut tail = lines.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
                let _ = eof_tx.send(true);
            });
        }
        Self { lines, eof }
    }

    async fn wait_for_eof(&self, grace: Duration) {
        let mut eof = self.eof.clone();
        let _ = tokio::time::timeout(grace, eof.wait_for(|done| *done)).await;
    }

    /// `"; stderr: ..."` with the server's last output, or nothing if it said nothing.
    fn hint(&self) -> String {
        let tail = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let text: Vec<&str> = tail
            .iter()
            .map(String::as_str)
            .filter(|l| !l.trim().is_empty())
            .collect();
        if text.is_empty() {
            String::new()
        } else {
            format!("; stderr: {}", text.join(" | "))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use rmcp::model::TextContent;

    #[test]
    fn text_parts_are_joined_and_errors_mapped() {
        let ok = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(tool_output(ok).unwrap(), "a\nb");
        let err = CallToolResult::error(vec![ContentBlock::Text(TextContent::new("bad input"))]);
        assert_eq!(
            tool_output(err).unwrap_err(),
            ToolError::failed("bad input")
        );
        let empty_err = CallToolResult::error(Vec::new());
        assert!(
            tool_output(empty_err)
                .unwrap_err()
                .to_string()
                .contains("reported an error")
        );
        let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        assert_eq!(tool_output(image).unwrap(), "[image: image/png]");
    }

    #[test]
    fn tool_name_rule() {
        assert!(valid_tool_name("read_file-2"));
        assert!(!valid_tool_name("github.search"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name(&"x".repeat(65)));
    }

    #[test]
    fn the_child_gets_only_the_basics_and_what_the_manifest_names() {
        let server = McpServerConfig {
            command: "x".into(),
            args: Vec::new(),
            env: [("LOG".to_owned(), "warn".to_owned())].into(),
            pass_env: vec!["GITHUB_TOKEN".into()],
            startup_timeout_secs: 5.0,
        };
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "de_DE.UTF-8"),
            ("TOMO_LLM_API_KEY", "sk-tomo"),
            ("OPENAI_API_KEY", "sk-openai"),
            ("GITHUB_TOKEN", "ghp_wanted"),
            ("SLACK_TOKEN", "xoxb-unwanted"),
            ("LOG", "debug"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let env: Vec<(String, String)> = child_environment(&server, parent.into_iter())
            .into_iter()
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["GITHUB_TOKEN", "HOME", "LC_ALL", "LOG", "PATH"]);
        assert!(env.contains(&("LOG".into(), "warn".into())), "{env:?}");
    }

    /// A real child: what it sees of the test's environment (cargo sets `CARGO_*` for every test).
    #[tokio::test]
    async fn a_real_child_starts_from_a_cleared_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("env.txt");
        let server = McpServerConfig {
            command: "sh".into(),
            args: vec!["-c".into(), format!("env > '{}'; exit 3", out.display())],
            env: [("LOG".to_owned(), "warn".to_owned())].into(),
            pass_env: Vec::new(),
            startup_timeout_secs: 5.0,
        };
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let _ = connect_mcp("envdump", &server, &ToolLimits::default()).await;
        let seen = std::fs::read_to_string(&out).unwrap();
        assert!(seen.contains("LOG=warn"), "{seen}");
        assert!(seen.lines().any(|l| l.starts_with("PATH=")), "{seen}");
        assert!(!seen.contains("CARGO_MANIFEST_DIR"), "{seen}");
    }

    #[tokio::test]
    async fn missing_command_is_a_start_error() {
        let server = McpServerConfig {
            command: "/nonexistent/tomo-no-such-mcp-server".into(),
            args: Vec::new(),
            env: Default::default(),
            pass_env: Vec::new(),
            startup_timeout_secs: 5.0,
        };
        let err = connect_mcp("ghost", &server, &ToolLimits::default())
            .await
            .err()
            .unwrap();
        assert!(
            matches!(&err, PluginError::Start { plugin, message }
            if plugin == "ghost" && message.contains("tomo-no-such-mcp-server")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn server_that_exits_reports_its_stderr() {
        let server = McpServerConfig {
            command: "sh".into(),
            args: vec!["-c".into(), "echo 'missing API token' >&2; exit 3".into()],
            env: Default::default(),
            pass_env: Vec::new(),
            startup_timeout_secs: 5.0,
        };
        let err = connect_mcp("quitter", &server, &ToolLimits::default())
            .await
            .err()
            .unwrap();
        let PluginError::Start { message, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(message.contains("`sh`"), "{message}");
        assert!(message.contains("missing API token"), "{message}");
    }

    #[tokio::test]
    async fn silent_server_times_out() {
        let server = McpServerConfig {
            command: "sleep".into(),
            args: vec!["30".into()],
            env: Default::default(),
            pass_env: Vec::new(),
            startup_timeout_secs: 0.3,
        };
        let started = std::time::Instant::now();
        let err = connect_mcp("sleepy", &server, &ToolLimits::default())
            .await
            .err()
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            matches!(&err, PluginError::Start { message, .. } if message.contains("did not answer")),
            "{err:?}"
        );
    }
}
