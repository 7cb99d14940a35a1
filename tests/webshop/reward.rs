//! WebShop's reward: hand-made vectors for every branch, and the final rewards of real recorded human
//! sessions (`../shared/webshop/human_sessions/`) as golden values for the parts their records determine.

use std::path::PathBuf;

use gigscope::webshop::catalog::Product;
use gigscope::webshop::goals::{Goal, GoalOptions};
use gigscope::webshop::reward::{combine, compute_reward, option_matches, type_score, ColorSet, RewardBreakdown};
use serde_json::Value;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop").join(name)
}

fn colors() -> ColorSet {
    ColorSet::from_file(&shared("color_set.json")).expect("color_set.json")
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn product() -> Product {
    Product {
        asin: "B000SHOE01".into(),
        title: "Trail Running Shoe for Men".into(),
        description: "A light shoe with a Rubber Sole.".into(),
        bullet_points: s(&["Machine Washable", "arch support insole"]),
        category: "fashion".into(),
        product_category: "Clothing, Shoes & Jewelry › Men › Shoes › Athletic".into(),
        query: "men's running shoes".into(),
        price_text: "$39.99".into(),
        prices: vec![39.99],
        price: 39.99,
        options: vec![("color".into(), s(&["black", "navy blue"])), ("size".into(), s(&["8", "9"]))],
        attributes: s(&["lace up", "non slip"]),
        instruction: None,
        instruction_attributes: vec![],
        title_nouns: Some(s(&["Trail", "Shoe", "Men"])),
    }
}

fn goal() -> Goal {
    Goal {
        asin: "B000SHOE01".into(),
        category: "fashion".into(),
        query: "men's running shoes".into(),
        name: "Trail Running Shoe for Men".into(),
        product_category: "Clothing, Shoes & Jewelry › Men › Shoes › Athletic".into(),
        instruction_text: "i want trail shoes".into(),
        attributes: s(&["non slip"]),
        price_upper: 50.0,
        goal_options: GoalOptions::Values(s(&["black", "8"])),
        weight: 1.0,
        title_nouns: Some(s(&["trail", "shoe", "men"])),
    }
}

fn chosen(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn reward(p: &Product, g: &Goal, price: f64, options: &[(&str, &str)]) -> RewardBreakdown {
    compute_reward(p, g, price, &chosen(options), &colors())
}

#[test]
fn the_right_product_with_the_right_options_is_a_success() {
    let r = reward(&product(), &goal(), 39.99, &[("color", "black"), ("size", "8")]);
    assert_eq!(
        r,
        RewardBreakdown {
            reward: 1.0,
            r_type: 1.0,
            r_att: 1.0,
            r_option: Some(1.0),
            r_price: true,
            title_score: 1.0,
            query_match: true,
            category_match: true,
        }
    );
    assert!(r.success());
}

#[test]
fn price_above_the_cap_loses_its_share() {
    let r = reward(&product(), &goal(), 50.01, &[("color", "black"), ("size", "8")]);
    assert!(!r.r_price);
    assert_eq!(r.reward, 3.0 / 4.0);
    assert!(!r.success());
    // The cap itself is allowed.
    assert!(reward(&product(), &goal(), 50.0, &[]).r_price);
}

#[test]
fn attributes_match_by_fuzzy_attribute_or_by_text() {
    let mut g = goal();
    g.goal_options = GoalOptions::Values(vec![]);
    let cases = [
        ("slip non", 1.0),         // token set equal to a product attribute
        ("non slip shoes", 1.0),   // a product attribute is a subset: 100
        ("trail running", 1.0),    // substring of the lower-cased title
        ("machine washable", 1.0), // of the joined bullet points (lower-cased)
        ("washable arch", 1.0),    // across the join of two bullet points
        ("rubber sole", 1.0),      // of the lower-cased description
        ("Rubber Sole", 0.0),      // the goal attribute itself is not lower-cased
        ("waterproof", 0.0),
    ];
    for (attr, want) in cases {
        g.attributes = vec![attr.to_owned()];
        let r = reward(&product(), &g, 10.0, &[]);
        assert_eq!(r.r_att, want, "{attr}");
        assert_eq!(r.r_option, None);
        assert_eq!(r.reward, (want + 1.0) / 2.0, "{attr}");
    }
    g.attributes = s(&["lace up", "waterproof", "rubber sole"]);
    let r = reward(&product(), &g, 10.0, &[]);
    assert_eq!(r.r_att, 2.0 / 3.0);
    assert_eq!(r.reward, 3.0 / 4.0);
}

#[test]
fn human_goal_options_use_colour_normalisation() {
    let mut g = goal();
    g.goal_options = GoalOptions::Values(s(&["jet black"]));
    // "jet black" and "black matte" both normalise to "black".
    assert_eq!(reward(&product(), &g, 10.0, &[("color", "black matte")]).r_option, Some(1.0));
    // Normalisation can also lose a match: "navy blue" becomes "blue" (listed before "navy").
    g.goal_options = GoalOptions::Values(s(&["navy"]));
    assert_eq!(reward(&product(), &g, 10.0, &[("color", "navy blue")]).r_option, Some(0.0));
    // Without colours the token subset would match.
    let no_colors = compute_reward(&product(), &g, 10.0, &chosen(&[("color", "navy blue")]), &ColorSet::empty());
    assert_eq!(no_colors.r_option, Some(1.0));
    // Half the options.
    g.goal_options = GoalOptions::Values(s(&["black", "9"]));
    let r = reward(&product(), &g, 10.0, &[("color", "black"), ("size", "8")]);
    assert_eq!(r.r_option, Some(0.5));
    assert_eq!(r.reward, 3.0 / 4.0);
    // Nothing chosen.
    assert_eq!(reward(&product(), &g, 10.0, &[]).r_option, Some(0.0));
}

#[test]
fn synthetic_goal_options_compare_as_python_tuples() {
    let mut g = goal();
    // A colour value equal to a listed colour is reduced to that colour.
    g.goal_options = GoalOptions::Pairs(chosen(&[("color", "black")]));
    assert_eq!(reward(&product(), &g, 10.0, &[("color", "black")]).r_option, Some(1.0));
    // Otherwise the pair reaches the matcher as "('size', '8')", i.e. the tokens {size, 8}: a chosen
    // "8" is a subset and scores 100.
    g.goal_options = GoalOptions::Pairs(chosen(&[("size", "8")]));
    assert_eq!(reward(&product(), &g, 10.0, &[("size", "8")]).r_option, Some(1.0));
    // "9" vs "size 8": no shared token, ratio("9", "8 size") = 0.
    assert_eq!(reward(&product(), &g, 10.0, &[("size", "9")]).r_option, Some(0.0));
    // A multi-word value that is not exactly a colour keeps the tuple form: the chosen "navy blue"
    // normalises to "blue", one of the pair's tokens {color, navy, blue}.
    g.goal_options = GoalOptions::Pairs(chosen(&[("color", "navy blue")]));
    assert_eq!(reward(&product(), &g, 10.0, &[("color", "navy blue")]).r_option, Some(1.0));
    // The option name is part of the tuple's tokens: "size" alone is a subset of ('size', 'xl').
    g.goal_options = GoalOptions::Pairs(chosen(&[("size", "xl")]));
    assert_eq!(reward(&product(), &g, 10.0, &[("fit", "size")]).r_option, Some(1.0));
}

#[test]
fn type_reward_branches() {
    let p = product();
    let base = goal();
    let mut g = base.clone();
    g.goal_options = GoalOptions::Values(vec![]);

    // Title score 1/3 > 0.2 alone keeps r_type 1.
    g.query = "other".into();
    g.product_category = "Toys › Games".into();
    g.title_nouns = Some(s(&["trail", "boot", "kid"]));
    let r = reward(&p, &g, 10.0, &[]);
    assert_eq!((r.r_type, r.query_match, r.category_match), (1.0, false, false));
    assert_eq!(r.title_score, 1.0 / 3.0);

    // Nothing but a title score of exactly 0.2 (not above): 0.5.
    g.title_nouns = Some(s(&["trail", "a", "b", "c", "d"]));
    let r = reward(&p, &g, 10.0, &[]);
    assert_eq!((r.title_score, r.r_type), (0.2, 0.5));

    // The query alone lifts it back to 1.
    g.query = base.query.clone();
    assert_eq!(reward(&p, &g, 10.0, &[]).r_type, 1.0);

    // Two shared breadcrumb levels alone do too (order and spacing do not matter).
    g.query = "other".into();
    g.product_category = "Men ›Clothing, Shoes & Jewelry".into();
    let r = reward(&p, &g, 10.0, &[]);
    assert_eq!((r.category_match, r.r_type), (true, 1.0));
    g.product_category = "Men › Toys".into();
    assert!(!reward(&p, &g, 10.0, &[]).category_match);

    // Below 0.1: 0.1 whatever matches. Repeated goal nouns count in the denominator.
    g.query = base.query.clone();
    g.title_nouns = Some(s(&["shoe", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]));
    let r = reward(&p, &g, 10.0, &[]);
    assert_eq!((r.title_score, r.r_type), (1.0 / 11.0, 0.1));
    assert_eq!(r.reward, 2.0 / 2.0 * 0.1);

    // No shared noun: 0, and the whole reward is 0.
    g.title_nouns = Some(s(&["boot"]));
    let r = reward(&p, &g, 10.0, &[]);
    assert_eq!((r.title_score, r.r_type, r.reward), (0.0, 0.0, 0.0));

    // A goal title without nouns scores 0.2.
    g.title_nouns = Some(vec![]);
    assert_eq!(reward(&p, &g, 10.0, &[]).title_score, 0.2);

    // Precomputed nouns are lower-cased as the original lower-cases spaCy's tokens.
    g.title_nouns = Some(s(&["TRAIL"]));
    assert_eq!(reward(&p, &g, 10.0, &[]).title_score, 1.0);

    // Without precomputed nouns both titles go through the approximation.
    let mut p2 = p.clone();
    p2.title_nouns = None;
    g.title_nouns = None;
    g.name = "Running Shoe for Women".into();
    let r = reward(&p2, &g, 10.0, &[]);
    assert_eq!(r.title_score, 2.0 / 3.0);
}

#[test]
fn breakdown_serialises_with_the_original_keys() {
    let mut g = goal();
    g.goal_options = GoalOptions::Values(vec![]);
    let v = serde_json::to_value(reward(&product(), &g, 10.0, &[])).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["reward", "r_type", "r_att", "r_option", "r_price", "title_score", "query_match", "category_match"]
    );
    assert_eq!(v["r_option"], Value::Null);
}

/// The last record of each human session is the purchase, with the reward the original computed and
/// its breakdown. The bought products are not among the shared records, so the title and attribute
/// parts are taken from the record; the option part, the price part, r_type's rule and the total
/// are recomputed.
#[test]
fn human_sessions_final_rewards() {
    let dir = shared("human_sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 9);
    let colors = colors();
    let mut with_options = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["page"], "done", "{}", path.display());
        let goal: Goal = serde_json::from_value(last["goal"].clone()).unwrap();
        let info = &last["reward_info"];
        let price = last["content"]["price"].as_f64().unwrap();
        let options: Vec<&str> =
            last["content"]["options"].as_object().unwrap().values().map(|v| v.as_str().unwrap()).collect();

        let r_price = price <= goal.price_upper;
        assert_eq!(info["r_price"].as_bool(), Some(r_price), "{}", path.display());

        let n_opt = option_matches(&options, &goal.goal_options, &colors);
        if goal.goal_options.is_empty() {
            assert!(info.get("r_option").is_none());
        } else {
            with_options += 1;
            let r_option = n_opt as f64 / goal.goal_options.len() as f64;
            assert_eq!(
                info["r_option"].as_f64(),
                Some(r_option),
                "{}: {options:?} vs {:?}",
                path.display(),
                goal.goal_options
            );
        }

        let title_score = info["title_score"].as_f64().unwrap();
        let query_match = info["query_match"].as_bool().unwrap();
        let category_match = info["category_match"].as_bool().unwrap();
        let r_type = type_score(query_match, category_match, title_score);
        assert_eq!(info["r_type"].as_f64(), Some(r_type), "{}", path.display());

        let n_att = (info["r_att"].as_f64().unwrap() * goal.attributes.len() as f64).round() as usize;
        let total = combine(n_att, n_opt, r_price, goal.attributes.len(), goal.goal_options.len(), r_type);
        assert_eq!(last["reward"].as_f64(), Some(total), "{}", path.display());
    }
    assert_eq!(with_options, 6);
}
