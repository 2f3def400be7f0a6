//! The OpenAI-compatible chat-completions client: the [`tomo_llm::ChatModel`] for every HTTP endpoint
//! (Ollama, LM Studio, llama.cpp's server, vLLM, cloud APIs). Streaming, its own chunk types (so
//! `reasoning_content` survives), our own retries (async-openai's are switched off).

mod capped;
mod client;
mod wire;

pub use capped::BodyLimits;
pub use client::{OpenAiClient, OpenAiConnector, connect, connect_engine};
