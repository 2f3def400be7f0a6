//! Helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};

type Handler = dyn Fn(Value) -> BoxFuture<'static, Result<String, ToolError>> + Send + Sync;

/// A tool made from a closure, for tests.
pub struct FnTool {
    spec: ToolSpec,
    handler: Box<Handler>,
}

impl FnTool {
    pub fn new<F, Fut>(spec: ToolSpec, handler: F) -> Arc<Self>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        Arc::new(Self {
            spec,
            handler: Box::new(move |args| Box::pin(handler(args))),
        })
    }
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        (self.handler)(args)
    }
}
pub mod agent;
