//! Talking to a language model: the conversation types, the [`ChatModel`] seam any engine implements,
//! tool-call assembly, the tool registry, and the streaming agent loop (up to six rounds of text and
//! concurrent tool calls). No HTTP here: the OpenAI-compatible client lives in `tomo-openai`.

pub mod agent;
mod anticipate;
mod assemble;
mod error;
mod messages;
mod model;
pub mod redact;
pub mod tools;

pub use assemble::{AssembledCall, ToolCallAssembler, ToolCallFragment};
pub use error::LlmError;
pub use messages::{
    ChatMessage, FunctionCall, FunctionDefinition, Priority, ToolDefinition, WireToolCall,
};
pub use model::{
    ChatModel, EmbeddedRequest, LlmClient, LlmConnector, LlmEndpoint, LlmEvent, LlmStream, WarmedUp,
};
