//! The environment port (`gigscope::env`): the registry names every environment and refuses unknown names and
//! options with what it knows; a run finds its environment from its `env`; WebShop's tasks start again from the
//! `task.id` an episode records (what ground truth replays in) and clones are independent episodes; every
//! registered environment opens and does what its capabilities say.

use std::collections::HashSet;
use std::path::Path;

use gigscope::env::{template_name, EnvOptions, Split, Tasks};
use gigscope::env_registry as registry;
use gigscope::run::Run;

#[test]
fn the_registry_names_its_environments_and_refuses_what_it_does_not_know() {
    assert_eq!(registry::names(), "webshop, sokoban");
    let err = registry::open("alfworld", &EnvOptions::default()).map(|_| ()).unwrap_err().to_string();
    assert_eq!(err, "no environment \"alfworld\" (known: webshop, sokoban)");
    let options = EnvOptions::parse(&["size=6".into()]).unwrap();
    let err = registry::check("webshop", &options).unwrap_err().to_string();
    assert_eq!(err, "webshop: option size: not an option of webshop (known: catalog, goal_source)");
    assert!(registry::check("sokoban", &options).is_ok());
    assert_eq!(EnvOptions::parse(&["size".into()]).unwrap_err(), "\"size\" is not KEY=VALUE");
    let options = EnvOptions::parse(&["goal_source=neither".into()]).unwrap();
    let err = registry::open("webshop", &options).map(|_| ()).unwrap_err().to_string();
    assert!(err.starts_with("webshop: option goal_source:"), "{err}");
}

#[test]
fn a_run_finds_its_environment_from_its_env() {
    let sokoban = Run::open(Path::new("sample_runs/sokoban-gigpo")).unwrap();
    assert_eq!(registry::of_run(&sokoban).map(|r| r.name), Some("sokoban"));
    let webshop = Run::open(Path::new("sample_runs/webshop-gigpo")).unwrap();
    assert_eq!(registry::of_run(&webshop).map(|r| r.name), Some("webshop"));
}

#[test]
fn templates_are_actions_whose_argument_the_player_types() {
    assert_eq!(template_name("search[<your query>]"), Some("search"));
    assert_eq!(template_name("search[red shoes]"), None);
    assert_eq!(template_name("click[< prev]"), None);
    assert_eq!(template_name("up"), None);
}

#[test]
fn webshop_tasks_start_again_from_the_recorded_task_id() {
    let tasks = registry::open("webshop", &EnvOptions::default()).unwrap();
    let (train, test) = (tasks.split(Split::Train), tasks.split(Split::Test));
    assert!(test.end <= train.start && !train.is_empty(), "{test:?} {train:?}");
    for index in [0, test.end, tasks.len() - 1] {
        let started = tasks.start(index).unwrap();
        let info = tasks.task(index).unwrap();
        assert_eq!(
            (started.task_id.as_str(), started.instruction.as_str()),
            (info.id.as_str(), info.instruction.as_str())
        );
        let mut first = started.env;
        let mut again = tasks.start_task(&info.id).unwrap().env;
        assert_eq!(first.page(), Some("search"));
        // The same actions give the same observations; a clone steps on its own.
        let clone = first.clone();
        for action in [format!("search[{}]", info.instruction), "click[next >]".into()] {
            assert_eq!(first.step(&action), again.step(&action));
            assert_eq!(first.observation(), again.observation());
        }
        assert_eq!(clone.page(), Some("search"), "the clone did not move");
        assert_eq!(first.page(), Some("results"));
    }
    assert!(tasks.start_task("goal-999999").is_err());
    assert!(tasks.start_task("seed-3").is_err());
}

/// The registry's invariants, over whatever it registers: each name once, each opens with its default options
/// under its own name and starts its splits' tasks again from their ids, and its capabilities match what it
/// does along a short walk: a page anchor gives the `page` it records when it plays, paged observations are
/// ` [SEP] ` pages, and it declares typed actions exactly when it offers an action template.
#[test]
fn every_registered_environment_opens_and_does_what_its_capabilities_say() {
    let mut seen = HashSet::new();
    for registered in registry::ENVIRONMENTS {
        let name = registered.name;
        assert!(seen.insert(name), "{name} is registered twice");
        assert_eq!(registry::find(name).map(|r| r.name).ok(), Some(name));
        assert_eq!(registry::names().split(", ").any(|n| n == name), !registered.stand_in);
        let tasks = registry::open(name, &EnvOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(tasks.env_name(), name);
        let capabilities = registered.capabilities;
        let mut offered_template = false;
        for split in [Split::Train, Split::Test] {
            let started = tasks.start_in(split, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(tasks.index_of(&started.task_id), Some(tasks.split(split).start), "{name}");
            let mut env = started.env;
            for _ in 0..8 {
                let actions = env.available_actions();
                let Some(last) = actions.len().checked_sub(1) else { break };
                let observation = env.observation().to_owned();
                if let Some(page_anchor) = capabilities.page_anchor {
                    assert_eq!(Some(page_anchor(&observation)), env.page(), "{name}: {observation}");
                }
                if capabilities.paged_observations {
                    assert!(observation.contains(" [SEP] "), "{name}: {observation}");
                }
                let action = match actions.iter().find_map(|a| template_name(a)) {
                    Some(template) => {
                        offered_template = true;
                        format!("{template}[{}]", started.instruction)
                    }
                    None => actions[last.min(2)].clone(),
                };
                env.step(&action);
            }
        }
        assert_eq!(capabilities.typed_action.is_some(), offered_template, "{name}");
    }
}

#[test]
fn a_run_has_the_capabilities_of_its_environment() {
    let webshop = Run::open(Path::new("sample_runs/webshop-gigpo")).unwrap();
    assert!(registry::capabilities(&webshop).has_page_anchors());
    assert!(registry::page_anchor(&webshop).is_some());
    let sokoban = Run::open(Path::new("sample_runs/sokoban-gigpo")).unwrap();
    assert!(!registry::capabilities(&sokoban).has_page_anchors());
    assert!(registry::page_anchor(&sokoban).is_none());
}
