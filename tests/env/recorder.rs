//! The recorder (`EpisodeRecorder`) keeps the environment's full state with each step it records: the compact
//! form (`run::state_hash`) of the fingerprint of the state the action was taken in. Ground truth finds a row's
//! state by starting the recorded task again and replaying the recorded actions before it; on a WebShop episode
//! that selects an option (a state the page's text hides) and on a Sokoban episode, the recorded states are the
//! ones that replay gives, and they tell apart what the observations do not.

use std::sync::Arc;

use gigscope::env::{template_name, EnvOptions, EpisodeRecorder, Tasks};
use gigscope::env_registry as registry;
use gigscope::run::{state_hash, Episode, Task};

/// Plays `choose(step, available actions)` from task `index` of `env` for at most `steps` steps, recorded.
fn play(
    env: &str,
    index: usize,
    steps: usize,
    choose: impl Fn(usize, &[String]) -> String,
) -> (Episode, Arc<dyn Tasks>) {
    let tasks = registry::open(env, &EnvOptions::default()).unwrap();
    let started = tasks.start(index).unwrap();
    let (task_id, instruction) = (started.task_id.clone(), started.instruction.clone());
    let mut live = started.env;
    let mut recorder = EpisodeRecorder::new();
    for t in 0..steps {
        let action = choose(t, &live.available_actions());
        if recorder.step(&mut *live, &action).done {
            break;
        }
    }
    let task = Task { id: task_id, instruction, extra: Default::default() };
    (recorder.finish(&*live, "played", "g", task), tasks)
}

/// Starts `episode`'s task again and replays its actions, as ground truth does: the state fingerprint before
/// each action.
fn replayed_fingerprints(tasks: &dyn Tasks, episode: &Episode) -> Vec<String> {
    let task = episode.task.as_ref().unwrap();
    let mut env = tasks.start_task(&task.id).unwrap().env;
    episode
        .steps
        .iter()
        .map(|step| {
            assert_eq!(env.observation(), &*step.observation, "the replay follows the recording");
            let fingerprint = env.state_fingerprint().expect("the environment declares fingerprints");
            env.step(&step.action);
            fingerprint
        })
        .collect()
}

fn assert_recorded_as_replayed(env: &str, episode: &Episode, tasks: &dyn Tasks) {
    let replayed = replayed_fingerprints(tasks, episode);
    for (t, (step, fingerprint)) in episode.steps.iter().zip(&replayed).enumerate() {
        assert_eq!(step.state.as_deref(), Some(state_hash(fingerprint).as_str()), "{env} step {t}: {fingerprint}");
        assert_eq!(step.state.as_ref().map(String::len), Some(16), "a hash, not the state's text");
    }
    let line = serde_json::to_string(episode).unwrap();
    let back: Episode = serde_json::from_str(&line).unwrap();
    assert_eq!(back.steps, episode.steps, "the state survives the run format");
}

/// Clicks that move between pages or end the episode, rather than select something on the page.
fn moves_on(action: &str) -> bool {
    let a = action.to_lowercase();
    ["click[buy now]", "click[< prev]", "click[next >]", "click[back to search]"].contains(&a.as_str())
        || ["click[description", "click[features", "click[reviews", "click[attributes"].iter().any(|p| a.starts_with(p))
}

#[test]
fn a_played_webshop_episode_records_the_states_truth_replays() {
    // Search, open the first product, then click what the item page offers: an option click leaves the page's
    // text as it was. Tasks are tried in turn until the product opened has options.
    for index in 0..20 {
        let (episode, tasks) = play("webshop", index, 5, |t, actions| {
            let pick = match t {
                0 => actions.iter().find_map(|a| template_name(a).map(|name| format!("{name}[shoes]"))),
                _ => actions.iter().find(|a| !moves_on(a)).cloned(),
            };
            pick.unwrap_or_else(|| "click[< prev]".into())
        });
        assert_recorded_as_replayed("webshop", &episode, &*tasks);
        let hidden = episode.steps.windows(2).any(|w| w[0].observation == w[1].observation && w[0].state != w[1].state);
        if hidden {
            return;
        }
    }
    panic!("no task's first product had an option to click");
}

#[test]
fn a_played_sokoban_episode_records_the_states_truth_replays() {
    let moves = ["up", "left", "down", "right"];
    let (episode, tasks) = play("sokoban", 0, 12, |t, _| moves[t % moves.len()].to_owned());
    assert!(episode.steps.len() >= 4);
    assert_recorded_as_replayed("sokoban", &episode, &*tasks);
    let states: std::collections::HashSet<_> = episode.steps.iter().map(|s| s.state.clone()).collect();
    assert_eq!(states.len(), episode.steps.len(), "the step count is part of every state");
}
