//! `time`: tells the model the current date and time, which it cannot know on its own: a `get_time` tool
//! (any time zone), and by default the local time in each turn's `[memory context]`. The second is what
//! small local models need: Qwen2.5-Coder-1.5B with a full character persona (Hana's emotion-tag rules)
//! answered "What time is it?" with a made-up "14:30" in every prompt wording tried, and the tool call's
//! first token was never among its eight likeliest; given the time in the context, it read it out right.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Local, Utc};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use tomo_config::manifest::ToolLimits;
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};
use tomo_plugin_api::hooks::{Hook, HookContext, HookError};
use tomo_plugin_api::{PluginError, PluginParts, limited_spec, parse_config};

const PLUGIN: &str = "time";
const MIN_OFFSET_HOURS: f64 = -12.0;
const MAX_OFFSET_HOURS: f64 = 14.0;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeConfig {
    /// Put the local date and time into every turn's `[memory context]` block.
    pub inject_now: bool,
}

impl Default for TimeConfig {
    fn default() -> Self {
        Self { inject_now: true }
    }
}

pub(crate) fn instantiate(
    config: &toml::Table,
    limits: &ToolLimits,
) -> Result<PluginParts, PluginError> {
    let config: TimeConfig = parse_config(PLUGIN, config)?;
    let spec = ToolSpec::new(
        "get_time",
        // The second sentence is for small local models, which otherwise answer the time from their
        // head (Qwen2.5-Coder-1.5B with Hana's persona said "14:30" without calling it).
        "Get the current local date, time, weekday and UTC offset. \
         You cannot know the time or the date without it: call it whenever the user asks what time, \
         day or date it is. Pass utc_offset_hours to get the time in another time zone.",
        json!({
            "type": "object",
            "properties": {
                "utc_offset_hours": {
                    "type": "number",
                    "minimum": MIN_OFFSET_HOURS,
                    "maximum": MAX_OFFSET_HOURS,
                    "description": "Hours east of UTC (e.g. 9 for Tokyo, -5 for New York in winter, 5.5 for India). Omit for the user's local time."
                }
            },
            "additionalProperties": false
        }),
    );
    let tool = TimeTool {
        spec: limited_spec(PLUGIN, spec, limits)?,
    };
    let hooks: Vec<Arc<dyn Hook>> = if config.inject_now {
        vec![Arc::new(NowHook)]
    } else {
        Vec::new()
    };
    Ok(PluginParts {
        tools: vec![Arc::new(tool)],
        hooks,
        ..PluginParts::default()
    })
}

/// The local time, read when the turn starts.
struct NowHook;

impl Hook for NowHook {
    fn name(&self) -> &str {
        PLUGIN
    }

    fn on_before_turn(
        &self,
        _user_text: String,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        let now = now_line(&Local::now().fixed_offset());
        Box::pin(async move { Ok(Some(now)) })
    }
}

/// Written as a person would say it (`Tuesday, 1 December 2026, 17:45`): models copy this line into
/// their answer, and the ISO form (`2026-12-01`) reads out badly.
fn now_line(now: &DateTime<FixedOffset>) -> String {
    let offset_secs = now.offset().local_minus_utc();
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let minutes = offset_secs.unsigned_abs() / 60;
    format!(
        "It is now {}, local time (UTC{sign}{:02}:{:02}).",
        now.format("%A, %-d %B %Y, %H:%M"),
        minutes / 60,
        minutes % 60
    )
}

struct TimeTool {
    spec: ToolSpec,
}

impl Tool for TimeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        let result = offset_from_args(&args).map(|offset| match offset {
            Some(offset) => format_time(&Utc::now().with_timezone(&offset)),
            None => format_time(&Local::now().fixed_offset()),
        });
        Box::pin(async move { result })
    }
}

/// Reads the optional `utc_offset_hours`. The registry validates against the schema already; this
/// re-checks because a wrong offset would silently give the model a wrong time.
fn offset_from_args(args: &Value) -> Result<Option<FixedOffset>, ToolError> {
    let hours = match args.get("utc_offset_hours") {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value.as_f64().ok_or_else(|| {
            ToolError::InvalidArguments("utc_offset_hours must be a number".to_owned())
        })?,
    };
    if !(MIN_OFFSET_HOURS..=MAX_OFFSET_HOURS).contains(&hours) {
        return Err(ToolError::InvalidArguments(format!(
            "utc_offset_hours must be between {MIN_OFFSET_HOURS} and {MAX_OFFSET_HOURS}, got {hours}"
        )));
    }
    // Rounded to whole minutes: real zones are whole minutes (e.g. +05:45), and chrono wants seconds.
    let seconds = ((hours * 60.0).round() as i32) * 60;
    FixedOffset::east_opt(seconds)
        .map(Some)
        .ok_or_else(|| ToolError::InvalidArguments(format!("invalid UTC offset {hours}")))
}

/// `2026-11-29 14:03 (Sunday), UTC+01:00`: compact, unambiguous, and easy for a model to read aloud.
fn format_time(now: &DateTime<FixedOffset>) -> String {
    let offset_secs = now.offset().local_minus_utc();
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let minutes = offset_secs.unsigned_abs() / 60;
    format!(
        "{} ({}), UTC{sign}{:02}:{:02}",
        now.format("%Y-%m-%d %H:%M"),
        now.format("%A"),
        minutes / 60,
        minutes % 60
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::PathBuf;

    use chrono::TimeZone;
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn ctx() -> ToolContext {
        ToolContext {
            agent_id: "a".into(),
            data_dir: PathBuf::from("/nonexistent"),
            cancel: CancellationToken::new(),
        }
    }

    fn tool() -> Arc<dyn Tool> {
        instantiate(&toml::Table::new(), &ToolLimits::default())
            .unwrap()
            .tools
            .remove(0)
    }

    #[test]
    fn formats_date_weekday_and_offset() {
        let tz = FixedOffset::east_opt(3600).unwrap();
        let dt = tz.with_ymd_and_hms(2026, 11, 29, 14, 3, 59).unwrap();
        assert_eq!(format_time(&dt), "2026-11-29 14:03 (Sunday), UTC+01:00");

        let tz = FixedOffset::west_opt(3 * 3600 + 30 * 60).unwrap();
        let dt = tz.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(format_time(&dt), "2025-01-01 00:00 (Wednesday), UTC-03:30");
    }

    fn hook_ctx() -> Arc<HookContext> {
        Arc::new(HookContext {
            agent_id: "a".into(),
            character_name: "Hana".into(),
            data_dir: PathBuf::from("/nonexistent"),
            turn_id: 1,
        })
    }

    #[tokio::test]
    async fn every_turn_is_told_the_local_time_unless_turned_off() {
        let parts = instantiate(&toml::Table::new(), &ToolLimits::default()).unwrap();
        assert_eq!(parts.hooks.len(), 1);
        let before = Local::now().format("%-d %B %Y, %H:%M").to_string();
        let told = parts.hooks[0]
            .on_before_turn("What time is it?".into(), hook_ctx())
            .await
            .unwrap()
            .unwrap();
        let after = Local::now().format("%-d %B %Y, %H:%M").to_string();
        assert!(
            told.starts_with("It is now ") && (told.contains(&before) || told.contains(&after)),
            "{told}"
        );

        let off: toml::Table = toml::from_str("inject_now = false").unwrap();
        let parts = instantiate(&off, &ToolLimits::default()).unwrap();
        assert!(parts.hooks.is_empty());
        assert_eq!(parts.tools.len(), 1, "the tool stays");
    }

    #[test]
    fn the_line_names_date_time_weekday_and_offset() {
        let tz = FixedOffset::east_opt(9 * 3600).unwrap();
        let dt = tz.with_ymd_and_hms(2026, 12, 1, 17, 45, 0).unwrap();
        assert_eq!(
            now_line(&dt),
            "It is now Tuesday, 1 December 2026, 17:45, local time (UTC+09:00)."
        );
    }

    #[tokio::test]
    async fn offset_argument_selects_zone() {
        let out = tool()
            .call(json!({"utc_offset_hours": 5.75}), ctx())
            .await
            .unwrap();
        assert!(out.ends_with("UTC+05:45"), "{out}");

        let out = tool()
            .call(json!({"utc_offset_hours": -12}), ctx())
            .await
            .unwrap();
        assert!(out.ends_with("UTC-12:00"), "{out}");

        // The hour in the requested zone matches UTC shifted by the offset (allowing a minute rollover).
        let out = tool()
            .call(json!({"utc_offset_hours": 0}), ctx())
            .await
            .unwrap();
        let expected = Utc::now().format("%Y-%m-%d %H").to_string();
        assert!(out.ends_with("UTC+00:00"), "{out}");
        let before_rollover = (Utc::now() - chrono::Duration::minutes(1))
            .format("%Y-%m-%d %H")
            .to_string();
        assert!(
            out.starts_with(&expected) || out.starts_with(&before_rollover),
            "{out} vs {expected}"
        );
    }

    #[tokio::test]
    async fn local_time_without_args() {
        let out = tool().call(json!({}), ctx()).await.unwrap();
        let local = Local::now().fixed_offset();
        let expected = format_time(&local);
        let offset = expected.rsplit(", ").next().unwrap();
        assert!(out.ends_with(&format!(", {offset}")), "{out} vs {expected}");
        // Same date and weekday, unless the test straddled midnight.
        let earlier = format_time(&(local - chrono::Duration::minutes(1)));
        assert!(
            out[..10] == expected[..10] || out[..10] == earlier[..10],
            "{out} vs {expected}"
        );
        assert!(
            out.contains(&local.format("(%A)").to_string())
                || out.contains(
                    &(local - chrono::Duration::minutes(1))
                        .format("(%A)")
                        .to_string()
                ),
            "{out}"
        );
    }

    #[tokio::test]
    async fn rejects_out_of_range_or_non_numeric_offset() {
        for args in [
            json!({"utc_offset_hours": 15}),
            json!({"utc_offset_hours": -12.5}),
            json!({"utc_offset_hours": "9"}),
        ] {
            let err = tool().call(args.clone(), ctx()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err:?}"
            );
        }
    }

    #[test]
    fn schema_forbids_extra_properties_and_limits_apply() {
        let limits = ToolLimits {
            timeout_secs: 3.0,
            retries: 2,
            ..ToolLimits::default()
        };
        let parts = instantiate(&toml::Table::new(), &limits).unwrap();
        let spec = parts.tools[0].spec();
        assert_eq!(spec.name, "get_time");
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        assert_eq!(spec.timeout, std::time::Duration::from_secs(3));
        assert_eq!(spec.retries, 2);
    }

    #[test]
    fn unknown_config_key_is_rejected() {
        let config: toml::Table = "zone = \"Europe/Paris\"".parse().unwrap();
        let err = instantiate(&config, &ToolLimits::default()).unwrap_err();
        assert!(matches!(err, PluginError::Config { field, .. } if field == "zone"));
    }
}
