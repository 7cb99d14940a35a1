//! Environments as a port: what the trainer, live play, autoplay and ground truth need from an environment,
//! and nothing about any one of them. Observations are plain text: the TUI shows them line by line (WebShop's
//! ` [SEP] ` segments one per line). An environment family ([`Tasks`]) holds a task list (ids, instructions,
//! train/test splits) and starts episodes; an episode ([`Environment`]) steps, offers actions, names the anchor
//! of its state (the exact text, and optionally an environment-specific anchor such as WebShop's page type,
//! as a plain string recorded in the step's `page`), and says how it was scored. Each task also comes with a
//! [`PolicyFeatures`]: how states and actions are described to the policy (hashed feature keys and a few
//! dense numbers), so the trainer's network has one shape whatever the environment.
//!
//! Each environment also declares what it can do beyond this minimum ([`Capabilities`]: page anchors, typed
//! actions, pages of segments) in its entry ([`Registered`]), so that what sits above asks for a capability, never
//! for an environment by name.
//!
//! No libtorch here: the `gigscope` binary (TUI live play) uses the port, and so does the training plugin.
//! Implementations live in their own folders (`crate::webshop::tasks`, `crate::sokoban`, `crate::toy_shop`),
//! which import this port and nothing above it; the registry above them (`crate::env_registry`) names them,
//! one line each. Nothing here imports an environment or the registry.

mod episode;
pub(crate) mod features;
pub(crate) mod page_anchor;
mod recorder;
mod registered;
mod tasks;

pub use episode::{template_name, Environment, Transition};
pub use features::{Decision, PolicyFeatures, StateView, Taken};
pub use page_anchor::{fill_page_anchors, PageAnchor};
pub use recorder::{step_taken_in, EpisodeRecorder};
pub use registered::{Capabilities, EnvOptions, Registered};
pub use tasks::{EnvError, Split, Started, TaskInfo, Tasks};
