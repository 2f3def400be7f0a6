//! What a plugin is made of, independent of the session that runs it: lifecycle hooks, sensors,
//! schedulers, tags read from the model's text, the factory a program registers, config parsing with
//! field-naming errors, and private files for what a plugin stores about the user.
//! Tools are `tomo_llm::tools` (the model calls them).

pub mod factory;
pub mod hooks;
mod parts;
pub mod private_files;
pub mod scheduler;
pub mod sensor;
pub mod tags;
pub mod trust;

pub use factory::{FactoryContext, PluginFactory};
pub use parts::{PluginError, PluginParts, limited_spec, parse_config, positive_secs};
pub use tags::TagSpec;
