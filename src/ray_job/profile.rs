//! Burst profiles: where a training burst runs and how gigscope's settings become the trainer's arguments.
//!
//! A profile is a `[burst.profiles.NAME]` table of the config file (the TUI's, `config.toml`):
//!
//! ```toml
//! [burst.profiles.verl]
//! backend = "ray"                       # or "in-process" (gigscope's own trainer in this process)
//! address = "http://head:8265"          # the Ray dashboard
//! entrypoint = "python3 -m verl.trainer.main_ppo {overrides} +gigscope.run={run}"
//! working_dir = "/shared/verl-agent"    # Ray's runtime_env.working_dir (uploaded by Ray)
//! runtime_env = { env_vars = { HF_HOME = "/shared/hf" } }
//! trainer = "verl-agent"                # start from the built-in verl-agent key table
//! [burst.profiles.verl.keys]
//! efficiency_alpha2 = "+env.webshop.efficiency_alpha2"   # a key of your own, added to the table
//! ```
//!
//! The entrypoint is a shell command template: `{overrides}` becomes the mapped settings (`key=value` words,
//! quoted for the shell), `{run}` the run directory. A profile without an entrypoint runs gigscope's own
//! `train` with the burst's arguments. [`render_command`] is the one place the exact command is made: what
//! the burst dialog shows, what is submitted and what the run records are the same string.
//!
//! Every setting a burst sets must have a key in the profile's table: a setting the trainer would silently
//! ignore is refused with its name, never dropped.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

/// Where a burst runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// gigscope's own trainer in this process (the training plugin).
    #[default]
    InProcess,
    /// A job on a Ray cluster, through its dashboard's Job Submission API.
    Ray,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::InProcess => "in-process",
            Backend::Ray => "ray",
        }
    }
}

/// A built-in table of trainer keys a profile starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrainerKeys {
    /// verl-agent's hydra keys ([`VERL_AGENT_KEYS`]).
    VerlAgent,
}

/// How one gigscope setting reaches the trainer: one key (`"algorithm.gamma"`, becoming
/// `algorithm.gamma=VALUE`) or several overrides, each `key` or a `key=TEMPLATE` in which `{value}` stands
/// for the setting's value.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KeyMapping {
    One(String),
    Many(Vec<String>),
}

/// verl-agent's hydra keys for gigscope's settings (its `ppo_trainer.yaml`). Settings left out have no
/// verl-agent key: reward shaping lives in verl-agent's environment code, so a profile maps it to keys of its
/// own (`[burst.profiles.NAME.keys]`).
pub const VERL_AGENT_KEYS: &[(&str, &[&str])] = &[
    ("estimator", &["algorithm.adv_estimator"]),
    ("gamma", &["algorithm.gamma"]),
    ("omega", &["algorithm.gigpo.step_advantage_w"]),
    ("norm", &["algorithm.gigpo.mode"]),
    ("similarity", &["algorithm.gigpo.enable_similarity=True", "algorithm.gigpo.similarity_thresh={value}"]),
    (
        "invalid_penalty",
        &[
            "actor_rollout_ref.actor.use_invalid_action_penalty=True",
            "actor_rollout_ref.actor.invalid_action_penalty_coef={value}",
        ],
    ),
    ("iterations", &["trainer.total_training_steps"]),
    ("seed", &["env.seed"]),
    ("group_size", &["env.rollout.n"]),
    ("goals", &["data.train_batch_size"]),
    ("step_limit", &["env.max_steps"]),
];

/// One `[burst.profiles.NAME]` table.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstProfile {
    #[serde(default)]
    pub backend: Backend,
    /// The Ray dashboard (`http://host:8265`); the command line's `--address` wins.
    pub address: Option<String>,
    /// The job's shell command template (`{overrides}`, `{run}`); none: gigscope's own `train`.
    pub entrypoint: Option<String>,
    /// Ray's `runtime_env.working_dir`.
    pub working_dir: Option<String>,
    /// Ray's `runtime_env`, passed as written (`working_dir` above is added to it).
    #[serde(default)]
    pub runtime_env: Map<String, Value>,
    /// A built-in key table to start from; `keys` adds to it and wins.
    pub trainer: Option<TrainerKeys>,
    #[serde(default)]
    pub keys: BTreeMap<String, KeyMapping>,
}

/// The `[burst]` table: named profiles, and a Ray dashboard for those that name none (the TUI then also offers
/// gigscope's own `train` there, as the profile `default`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstTable {
    pub address: Option<String>,
    #[serde(default)]
    pub profiles: BTreeMap<String, BurstProfile>,
}

/// A profile that cannot make a command.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("burst profile {profile:?} has no trainer key for the setting `{setting}` (value {value}); add one under [burst.profiles.{profile}.keys] or leave the setting at the trainer's own value")]
    Unmapped { profile: String, setting: String, value: String },
    #[error("no burst profile {name:?} in {file} (profiles there: {known})")]
    Unknown { name: String, file: String, known: String },
    #[error("{file}: [burst]: {reason}")]
    Parse { file: String, reason: String },
}

/// One setting of a burst: gigscope's name (`run.json`'s `advantage` keys, and `iterations`, `seed`,
/// `group_size`, `goals`, `step_limit`) and its value as the command line writes it.
pub type Setting = (String, String);

/// A burst's settings from its advantage overrides (the keys that are set) and its run shape.
pub fn settings_of(advantage: &Value, shape: &[(&str, String)]) -> Vec<Setting> {
    let advantage = advantage.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), value_text(v)));
    advantage.chain(shape.iter().map(|(k, v)| (k.to_string(), v.clone()))).collect()
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

impl BurstProfile {
    /// The key table in force: the built-in one named by `trainer`, then `keys` over it.
    pub fn key_table(&self) -> BTreeMap<String, Vec<String>> {
        let builtin = match self.trainer {
            Some(TrainerKeys::VerlAgent) => VERL_AGENT_KEYS,
            None => &[],
        };
        let mut table: BTreeMap<String, Vec<String>> =
            builtin.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect();
        for (setting, mapping) in &self.keys {
            let keys = match mapping {
                KeyMapping::One(key) => vec![key.clone()],
                KeyMapping::Many(keys) => keys.clone(),
            };
            table.insert(setting.clone(), keys);
        }
        table
    }

    /// The trainer's overrides for `settings`, in the settings' order: `key=value` words.
    pub fn overrides(&self, name: &str, settings: &[Setting]) -> Result<Vec<String>, ProfileError> {
        let table = self.key_table();
        let mut words = Vec::new();
        for (setting, value) in settings {
            let keys = table.get(setting).ok_or_else(|| ProfileError::Unmapped {
                profile: name.to_string(),
                setting: setting.clone(),
                value: value.clone(),
            })?;
            for key in keys {
                words.push(match key.split_once('=') {
                    Some((key, template)) => format!("{key}={}", template.replace("{value}", value)),
                    None => format!("{key}={value}"),
                });
            }
        }
        Ok(words)
    }

    /// Ray's runtime environment: `runtime_env` with `working_dir` added.
    pub fn runtime_env(&self) -> Map<String, Value> {
        let mut env = self.runtime_env.clone();
        if let Some(dir) = &self.working_dir {
            env.insert("working_dir".into(), Value::String(dir.clone()));
        }
        env
    }
}

/// `runtime_env` with this process's `GIGSCOPE_*` variables added to its `env_vars` (those it sets win), for a
/// job whose entrypoint is gigscope's own `train`: Ray starts the job with the head's environment, not this
/// process's, and the job's gigscope reads them (where the training plugin is, the cache).
pub fn forward_gigscope_env(runtime_env: &mut Map<String, Value>) {
    let vars: Map<String, Value> =
        std::env::vars().filter(|(k, _)| k.starts_with("GIGSCOPE_")).map(|(k, v)| (k, Value::String(v))).collect();
    if vars.is_empty() {
        return;
    }
    let env_vars = runtime_env.entry("env_vars").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(env_vars) = env_vars {
        for (k, v) in vars {
            env_vars.entry(k).or_insert(v);
        }
    }
}

/// The exact shell command a burst runs. With an entrypoint template: `{overrides}` and `{run}` filled in
/// (every set setting must be mapped). Without one: gigscope's own `train`, `gigscope_args` as given (they carry
/// the settings as its own flags), run from `cwd` so that relative paths mean what they meant here.
pub fn render_command(
    name: &str,
    profile: &BurstProfile,
    settings: &[Setting],
    run: &Path,
    gigscope: &Path,
    gigscope_args: &[String],
    cwd: &Path,
) -> Result<String, ProfileError> {
    match &profile.entrypoint {
        Some(template) => {
            let overrides = profile.overrides(name, settings)?;
            let overrides = overrides.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
            Ok(template.replace("{overrides}", &overrides).replace("{run}", &shell_quote(&run.display().to_string())))
        }
        None => {
            let mut words = vec![shell_quote(&gigscope.display().to_string())];
            words.extend(gigscope_args.iter().map(|a| shell_quote(a)));
            Ok(format!("cd {} && exec {}", shell_quote(&cwd.display().to_string()), words.join(" ")))
        }
    }
}

/// `word` as one shell word: as is when it holds only characters no shell treats specially, else in single
/// quotes.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
        });
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl BurstTable {
    /// The `[burst]` table of a config file's text (other tables are the TUI's and are not read here).
    pub fn from_config_text(text: &str, file: &Path) -> Result<BurstTable, ProfileError> {
        let parse = |reason: String| ProfileError::Parse { file: file.display().to_string(), reason };
        let table: toml::Table = toml::from_str(text).map_err(|e| parse(e.to_string()))?;
        match table.get("burst") {
            Some(burst) => burst.clone().try_into().map_err(|e: toml::de::Error| parse(e.to_string())),
            None => Ok(BurstTable::default()),
        }
    }

    /// The profile `name`, or an error naming the file and the profiles it has.
    pub fn profile(&self, name: &str, file: &Path) -> Result<&BurstProfile, ProfileError> {
        self.profiles.get(name).ok_or_else(|| ProfileError::Unknown {
            name: name.to_string(),
            file: file.display().to_string(),
            known: if self.profiles.is_empty() {
                "none".to_string()
            } else {
                self.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn verl() -> BurstProfile {
        let text = r#"
[burst.profiles.verl]
backend = "ray"
address = "http://head:8265"
entrypoint = "python3 -m verl.trainer.main_ppo {overrides} +gigscope.run={run}"
working_dir = "/shared/verl-agent"
runtime_env = { env_vars = { HF_HOME = "/shared/hf" } }
trainer = "verl-agent"
[burst.profiles.verl.keys]
efficiency_alpha2 = "+env.webshop.efficiency_alpha2"
"#;
        let table = BurstTable::from_config_text(text, Path::new("config.toml")).unwrap();
        table.profile("verl", Path::new("config.toml")).unwrap().clone()
    }

    fn settings(pairs: &[(&str, &str)]) -> Vec<Setting> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_verl_agent_profile_renders_the_hydra_overrides_of_every_setting() {
        let profile = verl();
        assert_eq!(profile.backend, Backend::Ray);
        let s = settings(&[
            ("gamma", "0.9"),
            ("omega", "0.5"),
            ("norm", "mean_std_norm"),
            ("similarity", "0.8"),
            ("invalid_penalty", "0.2"),
            ("efficiency_alpha2", "1.5"),
            ("iterations", "20"),
            ("seed", "7"),
        ]);
        let command = render_command(
            "verl",
            &profile,
            &s,
            Path::new("/shared/runs/a b"),
            Path::new("gigscope"),
            &[],
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(
            command,
            "python3 -m verl.trainer.main_ppo algorithm.gamma=0.9 algorithm.gigpo.step_advantage_w=0.5 \
             algorithm.gigpo.mode=mean_std_norm algorithm.gigpo.enable_similarity=True \
             algorithm.gigpo.similarity_thresh=0.8 actor_rollout_ref.actor.use_invalid_action_penalty=True \
             actor_rollout_ref.actor.invalid_action_penalty_coef=0.2 +env.webshop.efficiency_alpha2=1.5 \
             trainer.total_training_steps=20 env.seed=7 +gigscope.run='/shared/runs/a b'"
        );
        let env = profile.runtime_env();
        assert_eq!(env["working_dir"], "/shared/verl-agent");
        assert_eq!(env["env_vars"]["HF_HOME"], "/shared/hf");
    }

    #[test]
    fn a_setting_without_a_trainer_key_is_refused_by_name() {
        let err = verl().overrides("verl", &settings(&[("success_reward", "true")])).unwrap_err();
        assert!(matches!(&err, ProfileError::Unmapped { setting, .. } if setting == "success_reward"), "{err:?}");
        assert!(err.to_string().contains("[burst.profiles.verl.keys]"), "{err}");
    }

    #[test]
    fn without_an_entrypoint_the_burst_is_gigscopes_own_train_run_from_here() {
        let args: Vec<String> =
            ["train", "--run", "runs/x", "--gamma", "0.9", "--name", "it's"].map(String::from).into();
        let command = render_command(
            "default",
            &BurstProfile { backend: Backend::Ray, ..BurstProfile::default() },
            &settings(&[("gamma", "0.9")]),
            Path::new("runs/x"),
            &PathBuf::from("/opt/gig scope/gigscope"),
            &args,
            Path::new("/home/u/work"),
        )
        .unwrap();
        assert_eq!(
            command,
            r"cd /home/u/work && exec '/opt/gig scope/gigscope' train --run runs/x --gamma 0.9 --name 'it'\''s'"
        );
    }

    #[test]
    fn unknown_profiles_and_fields_are_named() {
        let file = Path::new("c.toml");
        let table = BurstTable::from_config_text("[keys]\nquit = [\"q\"]\n", file).unwrap();
        let err = table.profile("verl", file).unwrap_err().to_string();
        assert!(err.contains("\"verl\"") && err.contains("c.toml") && err.contains("none"), "{err}");
        let err = BurstTable::from_config_text("[burst.profiles.x]\nbackend = \"slurm\"\n", file).unwrap_err();
        assert!(err.to_string().starts_with("c.toml: [burst]:"), "{err}");
    }
}
