//! `web_fetch`: HTTP(S) GET of one page, returned as readable text.
//!
//! The model chooses the URL, so by default the tool refuses addresses on the user's machine or LAN
//! (loopback, private, link-local, ...): a prompt-injected page must not be able to make the companion
//! poke at the router or a local admin service. The check runs after DNS resolution (inside reqwest's
//! resolver, so the checked address is the one connected to) and again on every redirect hop.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{StatusCode, Url, header};
use serde::Deserialize;
use serde_json::{Value, json};

use tomo_config::manifest::ToolLimits;
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};
use tomo_plugin_api::{PluginError, PluginParts, limited_spec, parse_config, positive_secs};

const PLUGIN: &str = "web_fetch";
const MAX_REDIRECTS: usize = 5;
const USER_AGENT: &str = concat!(
    "Tomo/",
    env!("CARGO_PKG_VERSION"),
    " (desktop companion; web_fetch tool)"
);
/// Wide enough that html2text does not hard-wrap ordinary paragraphs into short lines.
const RENDER_WIDTH: usize = 200;

/// Settings of the `web_fetch` plugin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebFetchConfig {
    /// Stop reading the body after this many bytes.
    pub max_bytes: u64,
    /// Whole-request timeout (connect, redirects, body).
    pub timeout_secs: f64,
    /// Cut the returned text at this many characters.
    pub max_chars: usize,
    /// Allow loopback/private/link-local addresses (off: the model must not reach the user's LAN).
    pub allow_private_hosts: bool,
    /// Offer the tool in turns whose context holds screen text (off: a fetched URL could carry what
    /// was on the user's screen to any host).
    pub allow_with_screen_text: bool,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            max_bytes: 500_000,
            timeout_secs: 15.0,
            max_chars: 20_000,
            allow_private_hosts: false,
            allow_with_screen_text: false,
        }
    }
}

pub(crate) fn instantiate(
    config: &toml::Table,
    limits: &ToolLimits,
) -> Result<PluginParts, PluginError> {
    let config: WebFetchConfig = parse_config(PLUGIN, config)?;
    let tool = WebFetchTool::new(config, limits)?;
    Ok(PluginParts {
        tools: vec![Arc::new(tool)],
        hooks: Vec::new(),
        ..PluginParts::default()
    })
}

struct WebFetchTool {
    spec: ToolSpec,
    inner: Arc<Fetcher>,
}

struct Fetcher {
    config: WebFetchConfig,
    client: reqwest::Client,
}

impl WebFetchTool {
    fn new(config: WebFetchConfig, limits: &ToolLimits) -> Result<Self, PluginError> {
        let timeout = positive_secs(PLUGIN, "timeout_secs", config.timeout_secs)?;
        if config.max_bytes == 0 {
            return Err(PluginError::config(
                PLUGIN,
                "max_bytes",
                "must be at least 1",
            ));
        }
        if config.max_chars == 0 {
            return Err(PluginError::config(
                PLUGIN,
                "max_chars",
                "must be at least 1",
            ));
        }
        let mut builder = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            // Redirects are followed by hand so that each hop is re-checked against the host rule.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the target itself, defeating the private-address check.
            .no_proxy();
        if !config.allow_private_hosts {
            builder = builder.dns_resolver(Arc::new(PublicOnlyResolver));
        }
        let client = builder.build().map_err(|err| {
            PluginError::start(PLUGIN, format!("cannot build HTTP client: {err}"))
        })?;
        let spec = ToolSpec::new(
            "web_fetch",
            "Fetch a web page (HTTP GET) and return its readable text. Use for looking up a specific URL.",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "Absolute http:// or https:// URL"}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        );
        // A page is someone else's text; its URL can carry anything the model read.
        let spec = spec
            .with_untrusted_output(true)
            .with_egress(!config.allow_with_screen_text);
        Ok(Self {
            spec: limited_spec(PLUGIN, spec, limits)?,
            inner: Arc::new(Fetcher { config, client }),
        })
    }
}

impl Tool for WebFetchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>> {
        let fetcher = Arc::clone(&self.inner);
        Box::pin(async move {
            let url = args
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::InvalidArguments("`url` (string) is required".into()))?
                .to_owned();
            tokio::select! {
                _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                result = fetcher.fetch(&url) => result,
            }
        })
    }
}

impl Fetcher {
    async fn fetch(&self, raw_url: &str) -> Result<String, ToolError> {
        let mut url = parse_url(raw_url)?;
        let mut hops = 0;
        let response = loop {
            self.check_host(&url)?;
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(fetch_error)?;
            if !is_followed_redirect(response.status()) {
                break response;
            }
            if hops == MAX_REDIRECTS {
                return Err(ToolError::failed(format!(
                    "too many redirects (more than {MAX_REDIRECTS}) starting at {raw_url}"
                )));
            }
            hops += 1;
            url = redirect_target(&url, &response)?;
        };

        let status = response.status();
        if !status.is_success() {
            let message = format!("HTTP {status} from {url}");
            // Server-side trouble and rate limits may pass; a 404 will not.
            return Err(
                if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                    ToolError::transient(message)
                } else {
                    ToolError::failed(message)
                },
            );
        }
        let kind = content_kind(&response)?;
        let (body, truncated) = self.read_body(response).await?;
        let text = match kind {
            ContentKind::Html => html_to_text(body).await?,
            ContentKind::Text => String::from_utf8_lossy(&body).into_owned(),
        };
        Ok(self.present(&url, text, truncated))
    }

    fn check_host(&self, url: &Url) -> Result<(), ToolError> {
        if self.config.allow_private_hosts {
            return Ok(());
        }
        // IP literals never reach the resolver, so they are checked here; names are checked on resolution.
        let host = url.host_str().unwrap_or_default();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(ip) if is_private(ip) => Err(private_refusal(host, ip)),
            _ => Ok(()),
        }
    }

    /// Reads at most `max_bytes`; the flag says whether the body went on beyond that.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
    ) -> Result<(Vec<u8>, bool), ToolError> {
        let limit = usize::try_from(self.config.max_bytes).unwrap_or(usize::MAX);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(fetch_error)? {
            let room = limit - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }

    fn present(&self, url: &Url, text: String, bytes_truncated: bool) -> String {
        let text = text.trim();
        let mut out = format!("Content of {url}:\n\n");
        let chars_truncated = match text.char_indices().nth(self.config.max_chars) {
            Some((cut, _)) => {
                out.push_str(&text[..cut]);
                true
            }
            None => {
                out.push_str(text);
                false
            }
        };
        if bytes_truncated {
            let max = self.config.max_bytes;
            out.push_str(&format!(
                "\n\n[truncated: the page is larger than {max} bytes; only the start was read]"
            ));
        } else if chars_truncated {
            let max = self.config.max_chars;
            out.push_str(&format!("\n\n[truncated: text cut at {max} characters]"));
        }
        out
    }
}

enum ContentKind {
    Html,
    Text,
}

/// Decides from `Content-Type` before the body is read, so an image is never downloaded.
fn content_kind(response: &reqwest::Response) -> Result<ContentKind, ToolError> {
    let Some(value) = response.headers().get(header::CONTENT_TYPE) else {
        // Servers that send no type mostly serve text; binary bytes come out lossy but harmless.
        return Ok(ContentKind::Text);
    };
    let raw = value.to_str().unwrap_or_default();
    let mime = raw
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(ContentKind::Html),
        "application/json" | "application/xml" | "application/javascript" => Ok(ContentKind::Text),
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
            Ok(ContentKind::Text)
        }
        _ => Err(ToolError::failed(format!(
            "unsupported content type `{mime}`: web_fetch only reads text, HTML and JSON, not images or binary files"
        ))),
    }
}

/// Renders on a blocking thread: html2text's DOM is not `Send` and big pages take real CPU time.
async fn html_to_text(body: Vec<u8>) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || {
        html2text::config::plain()
            .link_footnotes(false)
            .string_from_read(body.as_slice(), RENDER_WIDTH)
    })
    .await
    .map_err(|err| ToolError::failed(format!("HTML conversion stopped: {err}")))?
    .map_err(|err| ToolError::failed(format!("cannot read the HTML page: {err}")))
}

fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let url = Url::parse(raw.trim())
        .map_err(|err| ToolError::InvalidArguments(format!("`{raw}` is not a valid URL: {err}")))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "only http:// and https:// URLs can be fetched, not `{other}:`"
            )));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolError::InvalidArguments(format!("`{raw}` has no host")));
    }
    Ok(url)
}

fn is_followed_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

fn redirect_target(current: &Url, response: &reqwest::Response) -> Result<Url, ToolError> {
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ToolError::failed(format!("redirect from {current} without a Location")))?;
    let next = current.join(location).map_err(|err| {
        ToolError::failed(format!("bad redirect `{location}` from {current}: {err}"))
    })?;
    // A redirect to file:// or similar is refused like a direct request would be.
    parse_url(next.as_str()).map_err(|err| ToolError::failed(format!("refused redirect: {err}")))
}

fn fetch_error(err: reqwest::Error) -> ToolError {
    // The resolver's refusal travels up inside reqwest's connect error.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<PrivateHostError>() {
            return ToolError::failed(refusal.to_string());
        }
        source = e.source();
    }
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut message = format!("{kind}: {err}");
    if let Some(cause) = std::error::Error::source(&err) {
        message.push_str(&format!(" ({cause})"));
    }
    ToolError::transient(message)
}

#[derive(Debug, thiserror::Error)]
#[error(
    "refused to fetch `{host}`: it resolves to {ip}, a private/local network address \
     (set allow_private_hosts = true in the web_fetch plugin config to allow this)"
)]
struct PrivateHostError {
    host: String,
    ip: IpAddr,
}

fn private_refusal(host: &str, ip: IpAddr) -> ToolError {
    ToolError::failed(
        PrivateHostError {
            host: host.to_owned(),
            ip,
        }
        .to_string(),
    )
}

/// Resolves with the system resolver and rejects names that map to any non-public address.
struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| is_private(a.ip())) {
                return Err(Box::new(PrivateHostError { host, ip: bad.ip() }) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Addresses that belong to this machine, the LAN, or are otherwise not the public internet.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0 // "this network"
                || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
                || (a == 198 && (b == 18 || b == 19)) // benchmarking, used by some home gear
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                || (first & 0xffc0) == 0xfec0 // deprecated site-local
        }
    }
}

#[cfg(test)]
#[path = "web_fetch_tests.rs"]
mod tests;
