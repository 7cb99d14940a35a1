//! Training bursts on the CPU, small and fast: a burst writes a valid run, the update lowers the loss on a
//! fixed batch, a checkpoint round-trips and a resumed run continues where it stopped.
#![cfg(feature = "train")]

use std::sync::atomic::AtomicBool;

use gigscope::run::Episode;
use gigscope::toy_shop::ToyShop;
use gigscope::trainer::checkpoint;
use gigscope::trainer::{DeviceChoice, PpoConfig, TrainConfig, Trainer};

fn tiny(iterations: u64) -> TrainConfig {
    TrainConfig {
        iterations,
        goals_per_iteration: 4,
        episodes_per_goal: 4,
        eval_every: 2,
        eval_goals: 10,
        seed: 7,
        device: DeviceChoice::Cpu,
        ..TrainConfig::default()
    }
}

fn read_episodes(dir: &std::path::Path) -> Vec<Episode> {
    std::fs::read_to_string(dir.join("episodes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn metrics(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_tiny_burst_writes_a_valid_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = Trainer::new(ToyShop, tiny(2), dir.path()).unwrap();
    trainer.run(&AtomicBool::new(false), |_| {}).unwrap();

    let episodes = read_episodes(dir.path());
    assert_eq!(episodes.len(), 2 * 4 * 4);
    let ids: std::collections::HashSet<&str> = episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), episodes.len(), "episode ids are unique");
    for e in &episodes {
        assert!(!e.steps.is_empty() && e.steps.len() <= 15);
        assert!(e.iteration == 1 || e.iteration == 2);
        assert_eq!(e.advantages.as_ref().map(Vec::len), Some(e.steps.len()));
        let task = e.task.as_ref().unwrap();
        assert!(e.group.contains(&task.id), "group = iteration + goal");
        assert!(!task.instruction.is_empty());
        let outcome = e.outcome.as_ref().unwrap();
        assert_eq!(outcome.score, e.total_reward());
        for s in &e.steps {
            let available = s.available_actions.as_ref().unwrap();
            assert!(available.contains(&s.action), "the action was one of the candidates");
            assert!(s.logprob.unwrap() <= 0.0);
            assert!(s.anchor.is_some() && s.page.is_some() && s.tokens.is_some());
        }
        assert_eq!(e.steps[0].anchor.as_deref(), Some("'Search'"));
    }
    // Every group has N episodes from the same start state.
    let mut groups = std::collections::HashMap::new();
    for e in &episodes {
        *groups.entry(e.group.clone()).or_insert(0) += 1;
    }
    assert!(groups.values().all(|&n| n == 4));

    let m = metrics(dir.path());
    assert_eq!(m.len(), 3, "iteration 0 (before training) and one per iteration");
    assert_eq!(m[0]["iteration"], 0);
    assert!(m[0]["eval_success"].is_number() && m[0]["baseline_success"].is_number());
    assert_eq!(m[2]["iteration"], 2);
    for key in ["loss", "entropy", "kl", "clip_frac", "env_steps_per_s", "singleton_step_groups", "eval_success"] {
        assert!(m[2][key].is_number(), "{key} in {}", m[2]);
    }

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["format"], "gigscope-run/1");
    assert_eq!(meta["advantage"]["estimator"], "gigpo");
    assert!(dir.path().join("checkpoint.ot").exists());
}

#[test]
fn a_new_run_refuses_a_directory_with_episodes() {
    let dir = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(1), dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();
    assert!(Trainer::new(ToyShop, tiny(1), dir.path()).is_err());
}

#[test]
fn a_stop_request_ends_the_burst_with_a_valid_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = Trainer::new(ToyShop, tiny(5), dir.path()).unwrap();
    trainer.run(&AtomicBool::new(true), |_| {}).unwrap();
    assert_eq!(trainer.iteration(), 0);
    assert!(read_episodes(dir.path()).is_empty());
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        Trainer::new(ToyShop, tiny(2), dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();
    }
    assert_eq!(read_episodes(a.path()), read_episodes(b.path()));
}

#[test]
fn a_resumed_run_continues_exactly_where_it_stopped() {
    // 2 iterations then 2 more from the checkpoint must equal 4 in one go.
    let whole = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(4), whole.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();

    let split = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(2), split.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();
    let mut resumed = Trainer::new(ToyShop, TrainConfig { resume: true, ..tiny(2) }, split.path()).unwrap();
    assert_eq!(resumed.iteration(), 2);
    resumed.run(&AtomicBool::new(false), |_| {}).unwrap();
    assert_eq!(resumed.iteration(), 4);
    assert_eq!(read_episodes(whole.path()), read_episodes(split.path()));
}

#[test]
fn resume_cuts_lines_the_checkpoint_does_not_cover() {
    let dir = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(1), dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();
    let before = read_episodes(dir.path());
    // Iteration 2 crashed after writing one of its episodes; meanwhile someone played an episode by hand
    // (iteration 0, as the TUI writes them) into the same run.
    let crashed = Episode { id: "i2-goal-0-0".into(), group: "i2-goal-0".into(), iteration: 2, ..before[0].clone() };
    let played = Episode { id: "play-1-0".into(), group: "play-1".into(), iteration: 0, ..before[0].clone() };
    let path = dir.path().join("episodes.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for e in [&crashed, &played] {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let mut resumed = Trainer::new(ToyShop, TrainConfig { resume: true, ..tiny(1) }, dir.path()).unwrap();
    let mut expected = before.clone();
    expected.push(played);
    assert_eq!(read_episodes(dir.path()), expected, "the crashed iteration's line is cut, the played one kept");
    // The trainer appends to the rewritten file.
    resumed.run(&AtomicBool::new(false), |_| {}).unwrap();
    let after = read_episodes(dir.path());
    assert_eq!(after[..expected.len()], expected[..]);
    assert_eq!(after.len(), expected.len() + 4 * 4);
}

#[test]
fn append_trains_a_fresh_policy_after_the_runs_last_iteration() {
    let dir = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(2), dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();
    let before = read_episodes(dir.path());
    // A run recorded elsewhere: the same episodes, no checkpoint.
    std::fs::remove_file(checkpoint::path_in(dir.path())).unwrap();
    assert!(Trainer::new(ToyShop, tiny(1), dir.path()).is_err(), "a run with episodes is not overwritten");
    let mut trainer = Trainer::new(ToyShop, TrainConfig { append: true, ..tiny(1) }, dir.path()).unwrap();
    assert_eq!(trainer.iteration(), 2);
    trainer.run(&AtomicBool::new(false), |_| {}).unwrap();
    let after = read_episodes(dir.path());
    assert_eq!(after[..before.len()], before[..], "nothing already written changes");
    assert!(after[before.len()..].iter().all(|e| e.iteration == 3));
    assert_eq!(checkpoint::read_state(&checkpoint::path_in(dir.path())).unwrap().iteration, 3);
}

#[test]
fn a_checkpoint_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = Trainer::new(ToyShop, tiny(2), dir.path()).unwrap();
    trainer.run(&AtomicBool::new(false), |_| {}).unwrap();
    let path = checkpoint::path_in(dir.path());
    let state = checkpoint::read_state(&path).unwrap();
    assert_eq!(state.iteration, 2);

    // Loading into a fresh trainer gives the same greedy behaviour, and saving it again the same tensors.
    let saved = dir.path().join("first.ot");
    std::fs::copy(&path, &saved).unwrap();
    let mut resumed = Trainer::new(ToyShop, TrainConfig { resume: true, ..tiny(0) }, dir.path()).unwrap();
    assert_eq!(resumed.evaluate().unwrap(), trainer.evaluate().unwrap());
    resumed.save_checkpoint().unwrap();
    let tensors = |p: &std::path::Path| {
        let mut named = tch::Tensor::load_multi(p).unwrap();
        named.retain(|(name, _)| name != "state");
        named.sort_by(|a, b| a.0.cmp(&b.0));
        named
    };
    let (a, b) = (tensors(&saved), tensors(&path));
    assert_eq!(a.len(), b.len());
    assert!(a.len() > 3);
    for ((na, ta), (nb, tb)) in a.iter().zip(&b) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after a round trip");
    }
    let again = checkpoint::read_state(&path).unwrap();
    assert_eq!(
        (again.iteration, again.episodes_bytes, again.config.clone()),
        (state.iteration, state.episodes_bytes, state.config)
    );
}

#[test]
fn the_update_lowers_the_loss_on_a_fixed_batch() {
    use gigscope::trainer::ppo::{self, Adam, Sample};
    use gigscope::trainer::rollout::{self, Chooser, Slot};
    use gigscope::trainer::{Split, Tasks};
    use rand::SeedableRng;

    // The initial weights as a trainer makes them: seeding torch's process-wide generator under the trainers' lock,
    // so a trainer starting in a parallel test cannot interleave its draws with these.
    let (vs, policy) = gigscope::trainer::policy::initial_policy(3, Default::default(), tch::Device::Cpu);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut slots: Vec<Slot> = (0..6).map(|g| Slot::new(ToyShop.start_in(Split::Train, g).unwrap())).collect();
    rollout::play(&mut slots, &mut Chooser::Sample(&policy, &mut rng), 15, tch::Device::Cpu).unwrap();
    // Alternate signs so that the batch asks for some actions to go up and others down.
    let samples: Vec<Sample> = slots
        .into_iter()
        .flat_map(|s| s.decisions.into_iter().zip(s.steps))
        .enumerate()
        .map(|(i, ((decision, chosen), step))| Sample {
            decision,
            chosen,
            old_logprob: step.logprob.unwrap() as f32,
            advantage: if i % 2 == 0 { 1.0 } else { -1.0 },
        })
        .collect();
    let config = PpoConfig { entropy_coef: 0.0, epochs: 1, minibatch: samples.len(), ..PpoConfig::default() };
    let all: Vec<&Sample> = samples.iter().collect();
    let before = ppo::loss(&policy, None, &all, &config, tch::Device::Cpu).loss.double_value(&[]);
    let mut adam = Adam::new(&vs);
    for _ in 0..5 {
        ppo::update(&policy, None, &mut adam, &samples, &config, &mut rng, tch::Device::Cpu);
    }
    let after = ppo::loss(&policy, None, &all, &config, tch::Device::Cpu).loss.double_value(&[]);
    assert!(after < before - 0.05, "loss {before} -> {after}");
}

#[test]
fn episodes_a_policy_plays_carry_the_reward_breakdown_as_hand_played_ones_do() {
    use gigscope::trainer::rollout::{self, Chooser, Slot};
    use gigscope::trainer::{Split, Tasks};
    use gigscope::webshop::tasks::WebShopTasks;
    let tasks = WebShopTasks::open(None, None).unwrap();
    let mut slots = vec![Slot::new(tasks.start_in(Split::Train, 0).unwrap())];
    // The rule baseline always buys, so the episode ends with WebShop's reward.
    rollout::play(&mut slots, &mut Chooser::<rand_chacha::ChaCha8Rng>::Rule, 15, tch::Device::Cpu).unwrap();
    let episode = slots[0].to_episode("e".into(), "g".into(), 0);
    assert_eq!(episode.steps.last().map(|s| s.action.as_str()), Some("click[buy now]"));
    let outcome = episode.outcome.unwrap();
    let info = outcome.extra.get("reward_info").expect("reward_info recorded");
    assert_eq!(info["reward"].as_f64(), Some(outcome.score), "{info}");
}

#[test]
fn every_burst_is_recorded_and_the_first_training_record_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let size = || std::fs::metadata(dir.path().join("episodes.jsonl")).map_or(0, |m| m.len());
    Trainer::new(ToyShop, TrainConfig { name: Some("first".into()), ..tiny(1) }, dir.path())
        .unwrap()
        .run(&AtomicBool::new(false), |_| {})
        .unwrap();
    let first_end = size();
    assert!(first_end > 0);
    Trainer::new(ToyShop, TrainConfig { resume: true, ..tiny(2) }, dir.path())
        .unwrap()
        .run(&AtomicBool::new(false), |_| {})
        .unwrap();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["train"]["name"], "first", "the first record stays: {meta}");
    assert_eq!(meta["train"]["iterations"], 1);
    let bursts = meta["bursts"].as_array().expect("bursts");
    assert_eq!(bursts.iter().map(|b| b["iterations"].as_u64()).collect::<Vec<_>>(), [Some(1), Some(2)]);
    // Each records the part of episodes.jsonl it wrote, and the second burst's groups are its own.
    let ranges: Vec<_> = bursts.iter().map(|b| (b["episodes_from"].as_u64(), b["episodes_to"].as_u64())).collect();
    assert_eq!(ranges, [(Some(0), Some(first_end)), (Some(first_end), Some(size()))], "{meta:#}");
    let run = gigscope::run::Run::open(dir.path()).unwrap();
    let spans = gigscope::run::bursts::burst_spans(run.meta.as_ref());
    for episode in &run.episodes {
        let offset = episode.read_from.0.expect("read from its line").offset;
        let burst = gigscope::run::bursts::burst_at(&spans, offset);
        assert_eq!(burst, Some(if episode.iteration == 1 { 1 } else { 2 }), "episode {}", episode.id);
    }
}

#[test]
fn a_full_disk_while_saving_a_checkpoint_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = Trainer::new(ToyShop, tiny(1), dir.path()).unwrap();
    trainer.run(&AtomicBool::new(false), |_| {}).unwrap();
    let path = checkpoint::path_in(dir.path());
    let before = std::fs::read(&path).unwrap();
    // The temporary file the save writes first is /dev/full: every write to it fails with ENOSPC, as on a
    // full disk (libtorch writing the file itself aborted the process here).
    let tmp = dir.path().join(format!(".checkpoint.ot.tmp{}", std::process::id()));
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let err = trainer.save_checkpoint().unwrap_err().to_string();
    assert!(err.contains("checkpoint.ot") && err.contains("No space left"), "{err}");
    assert!(std::fs::symlink_metadata(&tmp).is_err(), "the temporary file is removed");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the previous checkpoint is kept");
}
