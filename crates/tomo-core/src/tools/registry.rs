//! TODO
pub struct ToolRegistry;
pub struct ToolExecution;
