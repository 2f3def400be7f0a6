//! The OpenAI-compatible chat client: wire message types, streaming chunk decoding, tool-call assembly.

mod assemble;
mod client;
mod error;
mod wire;

pub use assemble::{AssembledCall, ToolCallAssembler, ToolCallFragment};
pub use client::{LlmClient, LlmEndpoint, LlmEvent, LlmStream};
pub use error::LlmError;
pub use wire::{ChatMessage, FunctionCall, ToolDefinition, WireToolCall};
