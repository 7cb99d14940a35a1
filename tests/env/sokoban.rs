//! Sokoban through the environment port: generated levels are solvable within their step limit (a breadth-first
//! solver written here, on the text form), rewards add up as specified (read back from the grids before and after
//! each step), bumps are valid no-ops and other text invalid no-ops, seeds are reproducible, and a task starts
//! again from the id an episode records.

use std::collections::{HashSet, VecDeque};

use gigscope::env::{EnvOptions, Split, Tasks};
use gigscope::env_registry as registry;
use gigscope::sokoban::features::parse_grid;
use gigscope::sokoban::level::{Level, LevelConfig};
use proptest::prelude::*;

const MOVES: [(&str, i32, i32); 4] = [("up", -1, 0), ("down", 1, 0), ("left", 0, -1), ("right", 0, 1)];

fn sokoban(options: &[&str]) -> std::sync::Arc<dyn Tasks> {
    let options = EnvOptions::parse(&options.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    registry::open("sokoban", &options).unwrap()
}

/// The grid as rows of glyphs.
fn grid(observation: &str) -> Vec<Vec<char>> {
    observation.lines().map(|l| l.chars().collect()).collect()
}

fn count(observation: &str, glyphs: &[char]) -> usize {
    observation.chars().filter(|c| glyphs.contains(c)).count()
}

/// The state as the text shows it: player, boxes (sorted), for the solver.
type State = ((usize, usize), Vec<(usize, usize)>);

/// Fewest moves that put every box on a target, by breadth-first search over (player, boxes), from the grid
/// text alone; `None` when no sequence of at most `limit` moves does.
fn solve(observation: &str, limit: usize) -> Option<usize> {
    let g = grid(observation);
    let mut player = (0, 0);
    let mut boxes = Vec::new();
    let mut targets = HashSet::new();
    let mut walls = HashSet::new();
    for (r, row) in g.iter().enumerate() {
        for (c, &ch) in row.iter().enumerate() {
            match ch {
                '#' => {
                    walls.insert((r, c));
                }
                'P' => player = (r, c),
                'S' => {
                    player = (r, c);
                    targets.insert((r, c));
                }
                'X' => boxes.push((r, c)),
                '√' => {
                    boxes.push((r, c));
                    targets.insert((r, c));
                }
                'O' => {
                    targets.insert((r, c));
                }
                _ => {}
            }
        }
    }
    boxes.sort();
    let start: State = (player, boxes);
    let mut seen = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([(start, 0usize)]);
    while let Some(((p, boxes), depth)) = queue.pop_front() {
        if boxes.iter().all(|b| targets.contains(b)) {
            return Some(depth);
        }
        if depth == limit {
            continue;
        }
        for (_, dr, dc) in MOVES {
            let step = |(r, c): (usize, usize)| ((r as i32 + dr) as usize, (c as i32 + dc) as usize);
            let next = step(p);
            if walls.contains(&next) {
                continue;
            }
            let mut moved = boxes.clone();
            if let Some(i) = boxes.iter().position(|b| *b == next) {
                let beyond = step(next);
                if walls.contains(&beyond) || boxes.contains(&beyond) {
                    continue;
                }
                moved[i] = beyond;
                moved.sort();
            }
            let state = (next, moved);
            if seen.insert(state.clone()) {
                queue.push_back((state, depth + 1));
            }
        }
    }
    None
}

#[test]
fn the_text_form_uses_verl_agents_notation() {
    let tasks = sokoban(&[]);
    let started = tasks.start(0).unwrap();
    let obs = started.env.observation().to_string();
    let g = grid(&obs);
    assert_eq!(g.len(), 6, "{obs}");
    assert!(g.iter().all(|row| row.len() == 6), "{obs}");
    assert!(obs.chars().all(|c| "#_OX√PS\n".contains(c)), "{obs}");
    assert!(g[0].iter().chain(&g[5]).all(|&c| c == '#'), "walls all round:\n{obs}");
    assert_eq!(count(&obs, &['P', 'S']), 1, "one player:\n{obs}");
    assert_eq!(count(&obs, &['X', '√']), 1, "one box by default:\n{obs}");
    assert!(count(&obs, &['X']) >= 1, "a level starts unsolved:\n{obs}");
    assert_eq!(started.env.anchor(), obs, "the grid is the whole state, so it is the anchor");
    assert_eq!(started.env.page(), None, "no page anchors outside WebShop");
    assert_eq!(started.env.available_actions(), ["up", "down", "left", "right"]);
}

#[test]
fn splits_are_disjoint_and_tasks_start_again_from_their_recorded_id() {
    let tasks = sokoban(&[]);
    let (train, test) = (tasks.split(Split::Train), tasks.split(Split::Test));
    assert!(train.end <= test.start || test.end <= train.start, "{train:?} {test:?}");
    assert!(!train.is_empty() && !test.is_empty());
    for index in [0, 57, train.start, train.end - 1] {
        let started = tasks.start(index).unwrap();
        let info = tasks.task(index).unwrap();
        assert_eq!(started.task_id, info.id);
        let again = tasks.start_task(&started.task_id).unwrap();
        assert_eq!(again.env.observation(), started.env.observation(), "{}", started.task_id);
    }
    assert!(tasks.start_task("seed-99999999").is_err());
    assert!(tasks.start_task("goal-3").is_err());
}

#[test]
fn options_are_checked() {
    for bad in [&["size=4"][..], &["boxes=0"], &["size=6", "boxes=9"], &["catalog=/tmp"], &["size=big"]] {
        let options = EnvOptions::parse(&bad.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let err = registry::open("sokoban", &options).map(|_| ()).unwrap_err().to_string();
        assert!(err.starts_with("sokoban: option"), "{bad:?}: {err}");
    }
}

#[test]
fn bumping_into_a_wall_is_a_valid_no_op_and_other_text_an_invalid_one() {
    let tasks = sokoban(&[]);
    let mut bumped = false;
    for index in 0..50 {
        let mut env = tasks.start(index).unwrap().env;
        let before = env.observation().to_string();
        let g = grid(&before);
        let (r, c) = (0..g.len())
            .flat_map(|r| (0..g.len()).map(move |c| (r, c)))
            .find(|&(r, c)| matches!(g[r][c], 'P' | 'S'))
            .unwrap();
        let Some((name, ..)) =
            MOVES.iter().find(|(_, dr, dc)| g[(r as i32 + dr) as usize][(c as i32 + dc) as usize] == '#')
        else {
            continue;
        };
        let t = env.step(name);
        assert!(t.valid && !t.done, "{index}");
        assert!((t.reward - -0.1).abs() < 1e-12, "{}", t.reward);
        assert_eq!(env.observation(), before, "a bump changes nothing");
        bumped = true;
        let t = env.step("jump");
        assert!(!t.valid && (t.reward - -0.1).abs() < 1e-12);
        assert_eq!(env.observation(), before);
    }
    assert!(bumped, "some level puts the player beside a wall");
}

#[test]
fn the_step_limit_ends_an_episode() {
    let tasks = sokoban(&["max_steps=3"]);
    let mut env = tasks.start(1).unwrap().env;
    let dones: Vec<bool> = (0..3).map(|_| env.step("jump").done).collect();
    assert_eq!(dones, [false, false, true]);
    assert!(env.available_actions().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Reverse play makes every level solvable, within the step limit.
    #[test]
    fn generated_levels_are_solvable_within_the_step_limit(
        seed in 0usize..10_100, size in 5usize..=8, boxes in 1usize..=2, max_steps in 8usize..=20,
    ) {
        let tasks = sokoban(&[&format!("size={size}"), &format!("boxes={boxes}"), &format!("max_steps={max_steps}")]);
        let env = tasks.start(seed).unwrap().env;
        let obs = env.observation();
        prop_assert_eq!(count(obs, &['X', '√']), boxes);
        prop_assert_eq!(count(obs, &['O', '√', 'S']), boxes, "as many targets as boxes");
        prop_assert!(count(obs, &['X']) >= 1, "unsolved at the start");
        let moves = solve(obs, max_steps);
        prop_assert!(moves.is_some(), "seed {} has no solution within {} moves:\n{}", seed, max_steps, obs);
    }

    /// The policy reads the state back from the text; every glyph maps back to the level it was drawn from.
    #[test]
    fn the_grid_text_reads_back_as_the_level(seed in 0u64..10_100, size in 5usize..=8, boxes in 1usize..=2) {
        let config = LevelConfig { size, boxes, max_steps: 15 };
        let level = Level::generate(seed, config).expect("a level");
        prop_assert_eq!(parse_grid(&level.render()), Some(level));
    }

    #[test]
    fn identical_seeds_give_identical_levels(seed in 0usize..10_100, size in 5usize..=8, boxes in 1usize..=2) {
        let options = [format!("size={size}"), format!("boxes={boxes}")];
        let a = sokoban(&[&options[0], &options[1]]).start(seed).unwrap().env.observation().to_string();
        let b = sokoban(&[&options[0], &options[1]]).start(seed).unwrap().env.observation().to_string();
        prop_assert_eq!(a, b);
    }

    /// Each step's reward is −0.1, +1 per box the step put on a target, −1 per box it took off one, +10 when
    /// the step solved the level, read from the grid before and after; the outcome's score is their sum.
    #[test]
    fn rewards_add_up_as_specified(seed in 0usize..10_100, actions in prop::collection::vec(0usize..5, 1..40)) {
        let tasks = sokoban(&["boxes=2", "max_steps=40"]);
        let mut env = tasks.start(seed).unwrap().env;
        let mut total = 0.0;
        for a in actions {
            if env.available_actions().is_empty() {
                break;
            }
            let before = env.observation().to_string();
            let action = MOVES.get(a).map_or("wait", |m| m.0);
            let t = env.step(action);
            let after = env.observation();
            let on = count(after, &['√']) as f64 - count(&before, &['√']) as f64;
            let solved = count(after, &['X']) == 0;
            let expected = -0.1 + on + if solved { 10.0 } else { 0.0 };
            prop_assert!((t.reward - expected).abs() < 1e-12, "{} gave {} not {}", action, t.reward, expected);
            prop_assert_eq!(t.valid, a < 4);
            if solved {
                prop_assert!(t.done);
            }
            total += t.reward;
        }
        let outcome = env.outcome();
        prop_assert!((outcome.score - total).abs() < 1e-9);
        prop_assert_eq!(outcome.success, count(env.observation(), &['X']) == 0);
        prop_assert!(outcome.extra.contains_key("reward_info"));
    }
}
