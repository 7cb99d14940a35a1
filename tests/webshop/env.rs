//! The environment on the real 1k records: page flow, action semantics and quirks, step limit,
//! cloning, episode recording, and a property test that no action string panics or corrupts state.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gigscope::env::EpisodeRecorder;
use gigscope::run::Task;
use gigscope::webshop::actions::SEARCH_ACTION;
use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::env::{ProductSearch, WebShopEnv, DEFAULT_MAX_STEPS};
use gigscope::webshop::goals::{build_goals, Goal, GoalOptions, GoalSource};
use gigscope::webshop::page::{classify_observation, PageType};
use gigscope::webshop::product_search::ProductIndex;
use gigscope::webshop::render::{self, format_for_gigpo, SubPage};
use gigscope::webshop::reward::{compute_reward, ColorSet};
use proptest::prelude::*;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop").join(name)
}

fn catalog() -> Arc<Catalog> {
    static CATALOG: OnceLock<Arc<Catalog>> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            let open = |p: &Path| File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let (products, ins) = (shared("products_394.json"), shared("items_ins_v2_1000.json"));
            let none: Option<(&Path, File)> = None;
            Arc::new(Catalog::from_readers((&products, open(&products)), (&ins, open(&ins)), none, 1).unwrap())
        })
        .clone()
}

fn colors() -> Arc<ColorSet> {
    Arc::new(ColorSet::from_file(&shared("color_set.json")).unwrap())
}

/// A search that always returns the same hits, so the page flow does not depend on ranking.
struct Fixed(Vec<usize>);

impl ProductSearch for Fixed {
    fn search(&self, _query: &str) -> Vec<usize> {
        self.0.clone()
    }
}

/// A synthetic goal whose product has two options with at least two values each, and its product.
fn goal_with_options(catalog: &Catalog) -> (Goal, usize) {
    static GOAL: OnceLock<(Goal, usize)> = OnceLock::new();
    GOAL.get_or_init(|| {
        let goals = build_goals(catalog, GoalSource::Synthetic, 0);
        let goal = goals
            .into_iter()
            .find(|g| {
                let p = catalog.get(&g.asin).unwrap();
                p.options.len() == 2 && p.options.iter().all(|(_, v)| v.len() >= 2)
            })
            .expect("a product with two options");
        let index = catalog.by_asin[&goal.asin];
        (goal, index)
    })
    .clone()
}

/// 23 hits with the goal's product 13th (on page 2).
fn env_with_fixed_hits(catalog: &Arc<Catalog>, target: usize) -> WebShopEnv {
    let mut hits: Vec<usize> = (0..catalog.products.len()).filter(|&i| i != target).take(22).collect();
    hits.insert(12, target);
    WebShopEnv::new(catalog.clone(), Arc::new(Fixed(hits)), colors())
}

fn assert_consistent(env: &WebShopEnv) {
    assert_eq!(classify_observation(env.observation()), env.page(), "{}", env.observation());
    assert_eq!(classify_observation(&env.anchor()), env.page(), "{}", env.anchor());
}

#[test]
fn an_episode_walks_every_page() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let product = &catalog.products[target];
    // Longer than the default limit, to visit everything in one episode.
    let mut env = env_with_fixed_hits(&catalog, target).with_max_steps(30);
    let instr = goal.instruction_text.clone();

    let obs = env.reset(goal.clone());
    assert_eq!(obs, render::search_page(&instr));
    assert_eq!(env.anchor(), "'Search'");
    assert_eq!(env.available_actions(), [SEARCH_ACTION, "click[search]"]);
    assert_consistent(&env);

    // click[search] is offered but does nothing.
    let out = env.step("click[search]");
    assert!(!out.info.admissible);
    assert_eq!((out.observation.as_str(), out.reward, out.done), (obs.as_str(), 0.0, false));

    let out = env.step("search[Anything At All]");
    assert!(out.info.admissible);
    assert_eq!(out.info.page, PageType::Results);
    assert!(out.observation.contains("Page 1 (Total results: 23) [SEP] Next > [SEP] "));
    assert_eq!(out.anchor, format_for_gigpo(&out.observation));
    let actions = env.available_actions();
    assert_eq!(&actions[..2], ["click[back to search]", "click[next >]"]);
    assert_eq!(actions.len(), 12);
    assert!(actions[2..].iter().all(|a| a.starts_with("click[b") && *a == a.to_lowercase()));
    assert_consistent(&env);

    // The target is on page 2; its asin is not clickable from page 1.
    let click_target = format!("click[{}]", product.asin.to_lowercase());
    assert!(!env.step(&click_target).info.admissible);
    assert!(!env.step("click[< prev]").info.admissible, "no < Prev on page 1");
    let out = env.step("click[next >]");
    assert!(out.observation.contains("Page 2 (Total results: 23) [SEP] < Prev [SEP] Next > [SEP] "));
    assert_eq!(env.available_actions()[..3], ["click[back to search]", "click[< prev]", "click[next >]"]);
    // Past the last page: an empty page that still offers Next >.
    env.step("click[next >]");
    let out = env.step("click[next >]");
    assert!(out.observation.ends_with("Page 4 (Total results: 23) [SEP] < Prev [SEP] Next >"), "{}", out.observation);
    assert_consistent(&env);
    env.step("click[< prev]");
    let out = env.step("click[< prev]");
    assert!(out.observation.contains("Page 2 (Total results: 23)"));

    // Upper-case asin in the action: the argument is lower-cased.
    let out = env.step(&format!("click[{}]", product.asin.to_uppercase()));
    assert!(out.info.admissible);
    assert_eq!(out.observation, render::item_page(&instr, product));
    assert_eq!(out.info.page, PageType::Item);
    assert_consistent(&env);
    let actions = env.available_actions();
    assert_eq!(
        actions[..6],
        [
            "click[back to search]",
            "click[< prev]",
            "click[description]",
            "click[features]",
            "click[reviews]",
            "click[buy now]"
        ]
    );
    assert_eq!(env.steps(), 10);

    // Choose the goal's options, visit a sub-page, come back: the options are kept.
    let GoalOptions::Pairs(pairs) = &goal.goal_options else { panic!("synthetic goal") };
    for (_, value) in pairs {
        assert!(env.step(&format!("click[{value}]")).info.admissible, "{value}");
    }
    let out = env.step("click[features]");
    assert_eq!(out.observation, render::item_sub_page(&instr, product, SubPage::Features));
    assert_eq!(env.available_actions(), ["click[back to search]", "click[< prev]"]);
    assert!(!env.step("click[buy now]").info.admissible, "no Buy Now on a sub-page");
    let out = env.step("click[< prev]");
    assert_eq!(out.info.page, PageType::Item);
    let out = env.step("click[buy now]");
    assert!(out.done && out.info.admissible);
    assert_eq!(out.info.page, PageType::Done);
    let expected =
        compute_reward(product, &goal, product.price, pairs, &ColorSet::from_file(&shared("color_set.json")).unwrap());
    assert_eq!(out.info.reward.as_ref(), Some(&expected));
    assert_eq!(out.reward, expected.reward);
    assert_eq!(expected.r_option, Some(1.0));
    assert_eq!(env.steps(), 16);
    assert_consistent(&env);

    // After the end nothing is admissible and nothing changes.
    let out = env.step("search[more]");
    assert!(out.done && !out.info.admissible && out.reward == 0.0);
    assert!(env.available_actions().is_empty());
}

#[test]
fn prev_from_an_item_forgets_the_chosen_options_and_search_works_anywhere() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let product = &catalog.products[target];
    let mut env = WebShopEnv::new(catalog.clone(), Arc::new(Fixed(vec![target])), colors());
    env.reset(goal.clone());
    env.step("search[x]");
    env.step(&format!("click[{}]", product.asin));
    let GoalOptions::Pairs(pairs) = &goal.goal_options else { panic!() };
    for (_, v) in pairs {
        env.step(&format!("click[{v}]"));
    }
    env.step("click[< prev]");
    assert_eq!(env.page(), PageType::Results);
    env.step(&format!("click[{}]", product.asin));
    let out = env.step("click[buy now]");
    assert_eq!(out.info.reward.unwrap().r_option, Some(0.0));

    // search[...] from an item page (which has no search bar) shows results page 1.
    let mut env = WebShopEnv::new(catalog.clone(), Arc::new(Fixed(vec![target])), colors());
    env.reset(goal);
    env.step("search[x]");
    env.step(&format!("click[{}]", product.asin));
    env.step("click[description]");
    let out = env.step("search[y]");
    assert!(out.info.admissible);
    assert!(out.observation.contains("Page 1 (Total results: 1)"));
    // Back to search returns to the start page.
    let out = env.step("click[back to search]");
    assert_eq!(out.info.page, PageType::Search);
    assert_eq!(out.anchor, "'Search'");
}

#[test]
fn the_step_limit_ends_the_episode_without_reward() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let mut env = env_with_fixed_hits(&catalog, target).with_max_steps(DEFAULT_MAX_STEPS);
    env.reset(goal);
    for i in 1..DEFAULT_MAX_STEPS {
        let out = env.step("think[nothing]");
        assert!(!out.done && !out.info.admissible && !out.info.truncated, "step {i}");
    }
    let out = env.step("search[x]");
    assert!(out.done && out.info.truncated && out.info.admissible);
    assert_eq!((out.reward, out.info.page), (0.0, PageType::Results));
    assert!(env.final_reward().is_none());
}

#[test]
fn clones_are_independent_snapshots() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let mut env = env_with_fixed_hits(&catalog, target);
    env.reset(goal);
    env.step("search[x]");
    let mut copy = env.clone();
    copy.step("click[next >]");
    copy.step("click[back to search]");
    assert_eq!(env.page(), PageType::Results);
    assert_eq!(env.steps(), 1);
    assert_eq!(copy.steps(), 3);
    assert_eq!(env.step("click[next >]").observation, {
        let mut again = copy.clone();
        again.step("search[x]");
        again.step("click[next >]").observation
    });
}

#[test]
fn real_search_finds_the_product_by_its_title() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let index = ProductIndex::build_in_memory(&catalog).unwrap();
    let mut env = WebShopEnv::new(catalog.clone(), Arc::new(index), colors());
    env.reset(goal.clone());
    let out = env.step(&format!("search[{}]", catalog.products[target].title));
    assert!(out.info.admissible);
    let asin = catalog.products[target].asin.to_lowercase();
    assert!(env.available_actions().contains(&format!("click[{asin}]")), "{}", out.observation);
}

#[test]
fn a_recorded_episode_is_a_run_format_episode() {
    let catalog = catalog();
    let (goal, target) = goal_with_options(&catalog);
    let mut env = WebShopEnv::new(catalog.clone(), Arc::new(Fixed(vec![target])), colors());
    env.reset(goal.clone());
    let mut rec = EpisodeRecorder::new();
    let asin = catalog.products[target].asin.to_lowercase();
    for a in ["search[shoes]", "nonsense", &format!("click[{asin}]"), "click[buy now]"] {
        rec.step(&mut env, a);
    }
    let task = Task { id: "7".into(), instruction: goal.instruction_text.clone(), extra: Default::default() };
    let ep = rec.finish(&env, "e1", "g1", task);
    assert_eq!(ep.steps.len(), 4);
    let pages: Vec<&str> = ep.steps.iter().map(|s| s.page.as_deref().unwrap()).collect();
    assert_eq!(pages, ["search", "results", "results", "item"]);
    assert_eq!(ep.steps[0].anchor.as_deref(), Some("'Search'"));
    assert_eq!(ep.steps[0].available_actions.as_deref().unwrap(), [SEARCH_ACTION, "click[search]"]);
    assert!(!ep.steps[1].valid && ep.steps[2].valid);
    let last = ep.steps.last().unwrap();
    let reward = env.final_reward().unwrap().reward;
    assert_eq!(last.reward, reward);
    assert_eq!(ep.total_reward(), reward);
    assert_eq!(ep.instruction(), goal.instruction_text);
    let outcome = ep.outcome.as_ref().unwrap();
    assert_eq!((outcome.score, outcome.success), (reward, reward == 1.0));
    assert!(outcome.extra["reward_info"]["r_type"].is_number());
    // It serialises as one run-format line and reads back equal.
    let line = serde_json::to_string(&ep).unwrap();
    assert_eq!(serde_json::from_str::<gigscope::run::Episode>(&line).unwrap(), ep);
}

/// Action strings of every kind: the page's own actions, near misses and arbitrary text.
fn any_action() -> impl Strategy<Value = String> {
    prop_oneof![
        (0usize..40).prop_map(|i| format!("#available {i}")),
        "(search|click|Click|buy)\\[[ -~]{0,12}\\][ -~]{0,3}",
        "click\\[(back to search|< prev|next >|description|features|reviews|buy now|search|BUY NOW)\\]",
        ".{0,30}",
        "[\\[\\]a-z ]{0,10}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn no_action_string_panics_or_corrupts_state(actions in prop::collection::vec(any_action(), 1..30)) {
        let catalog = catalog();
        let (goal, target) = goal_with_options(&catalog);
        let mut env = env_with_fixed_hits(&catalog, target);
        env.reset(goal);
        for a in actions {
            // `#available i` picks the page's i-th offered action (modulo their number).
            let action = match a.strip_prefix("#available ") {
                Some(i) => {
                    let offered = env.available_actions();
                    if offered.is_empty() { a.clone() } else { offered[i.parse::<usize>().unwrap() % offered.len()].replace("<your query>", "shoes") }
                }
                None => a,
            };
            let before = (env.observation().to_owned(), env.page(), env.available_actions(), env.is_done());
            let was_offered = before.2.contains(&action);
            let out = env.step(&action);
            prop_assert_eq!(&out.observation, env.observation());
            prop_assert_eq!(out.info.page, env.page());
            prop_assert_eq!(&out.anchor, &format_for_gigpo(&out.observation));
            prop_assert_eq!(classify_observation(&out.observation), out.info.page);
            prop_assert!(out.info.steps <= DEFAULT_MAX_STEPS);
            prop_assert!((0.0..=1.0).contains(&out.reward));
            if !out.info.admissible {
                prop_assert_eq!(&before.0, &out.observation);
                prop_assert_eq!(before.1, out.info.page);
                prop_assert_eq!(out.reward, 0.0);
            }
            if was_offered && action != "click[search]" && !before.3 {
                prop_assert!(out.info.admissible, "offered action {} refused", action);
            }
            if out.done {
                prop_assert!(env.available_actions().is_empty());
            }
        }
    }
}
