//! An episode's line parsed straight into its lean form, its text never copied.
//!
//! Read as an [`Episode`](super::Episode), a WebShop line allocates every observation, action and available
//! action, and the map of every step's unknown keys, only for [`super::text_on_disk::LeanEpisode::new`] to hash the
//! anchors and free the rest: most of reading a large run went to that. Here the line is walked once: the
//! anchor is hashed and the page classified where they lie in the line (borrowed; copied only when the JSON
//! escapes something in them), and the rest of the text is checked, not kept.
//!
//! It accepts exactly the lines the `Episode` reader accepts, with the same values: the same required keys,
//! types and `null`s, a known key twice is an error, an unknown key's value may be any JSON and the last of
//! repeated ones counts (as `#[serde(flatten)]` into a map gives it), and a record must be an object (a
//! flattened struct is never read from an array). `tests/run_lean_line.rs` checks that against the `Episode`
//! reader on generated and mutated lines. Its errors are not the reader's words: the caller reads a line it
//! refuses again as an `Episode`, for the reader's own message.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::format::{copies_of, reward_functions_of, source_file_of, COPIES_KEY, REWARDS_KEY, SOURCE_KEY};
use super::text_on_disk::{
    anchor_hash, recorded_states, EpisodeText, LeanEpisode, LeanExtras, LeanStep, PageClassifier, PageIds, SharedGroups,
};

/// Parse `line` (one JSON object, no newline) into a lean episode whose text is `text`, and the file its
/// `extra.source.file` names. Steps' page ids come from `pages`, interned only once the whole line has parsed
/// (a broken line adds no name); a step without a recorded page gets `classify`'s; the group's name is shared
/// through `groups`.
pub(super) fn parse(
    line: &str,
    text: EpisodeText,
    pages: &mut PageIds,
    groups: &mut SharedGroups,
    classify: Option<PageClassifier>,
) -> Result<(LeanEpisode, Option<String>), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(line);
    let (mut episode, page_names, source_file) = EpisodeSeed { classify, text, groups }.deserialize(&mut de)?;
    de.end()?;
    for (step, name) in episode.steps.iter_mut().zip(&page_names) {
        step.page = pages.id(name);
    }
    Ok((episode, source_file))
}

/// A string, borrowed from the line unless the JSON escaped something in it.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_string(TextVisitor)
    }
}

/// A string the lean form does not keep: checked to be one, never copied.
struct AnyString;

impl<'de> de::Deserialize<'de> for AnyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct AnyStringVisitor;
        impl<'de> Visitor<'de> for AnyStringVisitor {
            type Value = AnyString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<AnyString, E> {
                Ok(AnyString)
            }
        }
        d.deserialize_string(AnyStringVisitor)
    }
}

/// Any JSON value, checked as the `Episode` reader checks an unknown key's value (parsed, as into a map: a number
/// out of range is an error, as it is there), and dropped.
struct AnyJson;

impl<'de> de::Deserialize<'de> for AnyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyJson)
    }
}

impl<'de> Visitor<'de> for AnyJson {
    type Value = AnyJson;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_unit<E: de::Error>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map.next_entry::<AnyJson, AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
}

/// The position of a key among a record's known keys (`names.len()` for any other key), matched where the key
/// lies in the line.
struct KeyOf(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyOf {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeyOf {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        Ok(self.0.iter().position(|name| *name == key).unwrap_or(self.0.len()))
    }
}

/// Read a record's entries in turn, as the derived readers do: `value` reads the value of the key at position
/// `k` of `keys`; the first `fields` keys are fields, refused when given twice (the rest, like any key not in
/// `keys`, may repeat); the value of a key not in `keys` is checked and dropped.
fn entries<'de, A: MapAccess<'de>>(
    map: &mut A,
    keys: &'static [&'static str],
    fields: usize,
    mut value: impl FnMut(usize, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    let mut seen = 0u32;
    while let Some(k) = map.next_key_seed(KeyOf(keys))? {
        if k < fields {
            if seen & (1 << k) != 0 {
                return Err(de::Error::duplicate_field(keys[k]));
            }
            seen |= 1 << k;
        }
        if k < keys.len() {
            value(k, map)?;
        } else {
            map.next_value::<AnyJson>()?;
        }
    }
    Ok(())
}

/// A required key's value, or the reader's error for its absence.
fn required<T, E: de::Error>(value: Option<T>, name: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(name))
}

/// Records are read from objects only, as a struct with a flattened field is (never from an array).
fn map_only<'de, D: Deserializer<'de>, V: Visitor<'de>>(d: D, visitor: V) -> Result<V::Value, D::Error> {
    d.deserialize_map(visitor)
}

const EPISODE_KEYS: &[&str] = &["id", "group", "iteration", "task", "steps", "outcome", "advantages", SOURCE_KEY];
/// Keys of [`EPISODE_KEYS`] that are fields (the rest are unknown keys the lean form reads).
const EPISODE_FIELDS: usize = 7;

struct EpisodeSeed<'g> {
    classify: Option<PageClassifier>,
    text: EpisodeText,
    groups: &'g mut SharedGroups,
}

/// An episode (its steps' page ids still to be given), the page name of each step, and `extra.source.file`.
type EpisodeRead<'de> = (LeanEpisode, Vec<Cow<'de, str>>, Option<String>);

impl<'de> DeserializeSeed<'de> for EpisodeSeed<'_> {
    type Value = EpisodeRead<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        map_only(d, self)
    }
}

impl<'de> Visitor<'de> for EpisodeSeed<'_> {
    type Value = EpisodeRead<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an episode")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut id, mut group, mut iteration, mut steps) = (None, None, 0, None);
        let (mut outcome, mut advantages, mut source) = (None, None, None);
        entries(&mut map, EPISODE_KEYS, EPISODE_FIELDS, |k, map| {
            match k {
                0 => id = Some(map.next_value::<String>()?.into_boxed_str()),
                1 => group = Some(map.next_value::<Text<'de>>()?.0),
                2 => iteration = map.next_value::<i64>()?,
                3 => _ = map.next_value::<Option<TaskCheck>>()?,
                4 => steps = Some(map.next_value_seed(StepsSeed { classify: self.classify })?),
                5 => outcome = map.next_value::<Option<OutcomeRead>>()?,
                6 => advantages = map.next_value::<Option<Vec<f64>>>()?,
                _ => source = Some(map.next_value::<Value>()?),
            }
            Ok(())
        })?;
        let (id, group) = (required(id, "id")?, self.groups.share(&required(group, "group")?));
        let Steps { steps, page_names, states, tokens, token_steps } = required(steps, "steps")?;
        let OutcomeRead { success, rewards } = outcome.unwrap_or_default();
        let (reward_names, rewards) = rewards.unzip();
        let source_file = source_file_of(source.as_ref()).map(str::to_owned);
        let extras = LeanExtras {
            source: source.as_ref().and_then(Value::as_str).map(Into::into),
            reward_names: reward_names.map(Arc::from),
            rewards,
            advantages,
            states: recorded_states(states.into_iter()),
        };
        let steps = steps.into_boxed_slice();
        let extras = extras.boxed();
        let episode =
            LeanEpisode { id, group, iteration, success, tokens, token_steps, steps, extras, text: self.text };
        Ok((episode, page_names, source_file))
    }
}

const TASK_KEYS: &[&str] = &["id", "instruction"];

/// A task, checked (the lean form keeps nothing of it).
struct TaskCheck;

impl<'de> de::Deserialize<'de> for TaskCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        map_only(d, TaskCheck)
    }
}

impl<'de> Visitor<'de> for TaskCheck {
    type Value = TaskCheck;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a task")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TaskCheck, A::Error> {
        entries(&mut map, TASK_KEYS, TASK_KEYS.len(), |_, map| map.next_value::<AnyString>().map(drop))?;
        Ok(TaskCheck)
    }
}

const OUTCOME_KEYS: &[&str] = &["success", "score", REWARDS_KEY];
const OUTCOME_FIELDS: usize = 2;

/// What the lean form keeps of an outcome: success, and the per-function rewards
/// ([`super::Episode::reward_functions`]).
#[derive(Default)]
struct OutcomeRead {
    success: bool,
    rewards: Option<(Vec<String>, Vec<f64>)>,
}

impl<'de> de::Deserialize<'de> for OutcomeRead {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        map_only(d, OutcomeVisitor)
    }
}

struct OutcomeVisitor;

impl<'de> Visitor<'de> for OutcomeVisitor {
    type Value = OutcomeRead;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an outcome")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OutcomeRead, A::Error> {
        let (mut success, mut rewards) = (false, None);
        entries(&mut map, OUTCOME_KEYS, OUTCOME_FIELDS, |k, map| {
            match k {
                0 => success = map.next_value::<bool>()?,
                1 => _ = map.next_value::<f64>()?,
                _ => rewards = Some(map.next_value::<Value>()?),
            }
            Ok(())
        })?;
        Ok(OutcomeRead { success, rewards: reward_functions_of(rewards.as_ref()) })
    }
}

/// An episode's steps in lean form, the page name of each, and their token counts.
struct Steps<'de> {
    steps: Vec<LeanStep>,
    page_names: Vec<Cow<'de, str>>,
    /// [`anchor_hash`] of each step's recorded state.
    states: Vec<Option<u64>>,
    /// Σ tokens (0 for a step without a count), and how many steps record a count.
    tokens: u64,
    token_steps: u32,
}

struct StepsSeed {
    classify: Option<PageClassifier>,
}

impl<'de> DeserializeSeed<'de> for StepsSeed {
    type Value = Steps<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for StepsSeed {
    type Value = Steps<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Steps<'de>, A::Error> {
        let mut out =
            Steps { steps: Vec::new(), page_names: Vec::new(), states: Vec::new(), tokens: 0, token_steps: 0 };
        while let Some(step) = seq.next_element_seed(StepSeed { classify: self.classify })? {
            out.steps.push(step.lean);
            out.page_names.push(step.page);
            out.states.push(step.state);
            out.tokens += step.tokens.unwrap_or(0);
            out.token_steps += u32::from(step.tokens.is_some());
        }
        Ok(out)
    }
}

const STEP_KEYS: &[&str] = &[
    "observation",
    "anchor",
    "action",
    "reward",
    "valid",
    "available_actions",
    "tokens",
    "thought",
    "logprob",
    "page",
    "state",
    COPIES_KEY,
];
const STEP_FIELDS: usize = 11;

/// One step in lean form (its page id still to be given), its page name and its token count.
struct StepRead<'de> {
    lean: LeanStep,
    page: Cow<'de, str>,
    tokens: Option<u64>,
    /// [`anchor_hash`] of the recorded state.
    state: Option<u64>,
}

struct StepSeed {
    classify: Option<PageClassifier>,
}

impl<'de> DeserializeSeed<'de> for StepSeed {
    type Value = StepRead<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        map_only(d, self)
    }
}

impl<'de> Visitor<'de> for StepSeed {
    type Value = StepRead<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a step")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StepRead<'de>, A::Error> {
        let (mut observation, mut anchor, mut action, mut reward) = (None, None, false, None);
        let (mut valid, mut tokens, mut page, mut state, mut copies) = (true, None, None, None, None);
        entries(&mut map, STEP_KEYS, STEP_FIELDS, |k, map| {
            match k {
                0 => observation = Some(map.next_value::<Text<'de>>()?.0),
                1 => anchor = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                2 => action = map.next_value::<AnyString>().map(|_| true)?,
                3 => reward = Some(map.next_value::<f64>()?),
                4 => valid = map.next_value::<bool>()?,
                5 => _ = map.next_value::<Option<Vec<AnyString>>>()?,
                6 => tokens = map.next_value::<Option<u64>>()?,
                7 => _ = map.next_value::<Option<AnyString>>()?,
                8 => _ = map.next_value::<Option<f64>>()?,
                9 => page = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                10 => state = map.next_value::<Option<Text<'de>>>()?.map(|t| anchor_hash(&t.0)),
                _ => copies = Some(map.next_value::<Value>()?),
            }
            Ok(())
        })?;
        let observation = required(observation, "observation")?;
        if !action {
            return Err(de::Error::missing_field("action"));
        }
        let reward = required(reward, "reward")?;
        let page = match (page, self.classify) {
            (Some(page), _) => page,
            (None, Some(classify)) => Cow::Borrowed(classify(&observation)),
            (None, None) => Cow::Borrowed(""),
        };
        let copies = copies_of(copies.as_ref());
        let anchor = anchor_hash(anchor.as_deref().unwrap_or(&observation));
        Ok(StepRead { lean: LeanStep { anchor, reward, copies, page: 0, valid }, page, tokens, state })
    }
}

#[cfg(test)]
mod tests {
    //! The lean parse against the `Episode` reader followed by [`LeanEpisode::new`], on generated lines: every
    //! record type's known keys present, missing, `null`, of another type or given twice, unknown keys with any
    //! JSON (numbers out of range, escapes, lone surrogates), keys written with escapes, records as arrays.

    use proptest::prelude::*;

    use super::super::format::Episode;
    use super::super::text_on_disk::{LeanEpisode, PageIds, TextStore};
    use super::*;

    fn classify(observation: &str) -> &'static str {
        if observation.contains("Back to Search") {
            "results"
        } else {
            "search"
        }
    }

    /// What both readers make of `line`: the lean form (as Debug text: NaN rewards compare equal so) and the
    /// source file, or `None` when the line is refused.
    fn both(line: &str) -> (Option<String>, Option<String>) {
        let store = TextStore::new(std::path::Path::new("episodes.jsonl"));
        let full = serde_json::from_str::<Episode>(line).ok().map(|episode| {
            let file = episode.source_file().map(str::to_owned);
            let mut pages = PageIds::default();
            let lean = LeanEpisode::new(episode, &store, &mut pages, Some(&classify));
            let text = format!(
                "{:?}",
                (&lean.id, &lean.group, lean.iteration, lean.success, lean.tokens, lean.token_steps, &lean.steps)
            );
            (text, format!("{:?}", lean.extras.map(|e| *e).unwrap_or_default()), file, pages)
        });
        let mut pages = PageIds::default();
        let on_disk = EpisodeText::InMemory(Arc::new(Episode::new("", "", vec![])));
        let lean =
            parse(line, on_disk, &mut pages, &mut SharedGroups::default(), Some(classify)).ok().map(|(l, file)| {
                let text =
                    format!("{:?}", (&l.id, &l.group, l.iteration, l.success, l.tokens, l.token_steps, &l.steps));
                (text, format!("{:?}", l.extras.map(|e| *e).unwrap_or_default()), file, pages)
            });
        let show = |r: Option<(String, String, Option<String>, PageIds)>| {
            r.map(|(a, b, c, pages)| format!("{a} {b} {c:?} {:?}", pages.names().collect::<Vec<_>>()))
        };
        (show(full), show(lean))
    }

    fn agree(line: &str) {
        let (full, lean) = both(line);
        assert_eq!(full, lean, "{line}");
    }

    #[test]
    fn refuses_and_reads_what_the_episode_reader_does() {
        let step = r#"{"observation":"Back to Search [SEP] x","action":"click[x]","reward":1}"#;
        for line in [
            format!(r#"{{"id":"a","group":"g","steps":[{step}]}}"#),
            // A known key twice, at the top and in a step.
            format!(r#"{{"id":"a","id":"b","group":"g","steps":[{step}]}}"#),
            r#"{"id":"a","group":"g","steps":[{"observation":"o","action":"x","reward":1,"reward":2}]}"#.into(),
            // An unknown key twice: the last counts.
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"source":{{"file":"x"}},"source":{{"file":"y"}}}}"#),
            // Numbers out of range in an unknown key's value, and in a known one.
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"k":[1e400]}}"#),
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"iteration":9223372036854775808}}"#),
            // A lone surrogate, in an unknown key's value and in an observation.
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"k":"\ud800"}}"#),
            r#"{"id":"a","group":"g","steps":[{"observation":"\ud800","action":"x","reward":1}]}"#.into(),
            // Keys written with escapes; records as arrays.
            format!(r#"{{"i\u0064":"a","gr\u006fup":"g","steps":[{step}]}}"#),
            r#"{"id":"a","group":"g","steps":[["o","x",1]]}"#.into(),
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"task":["t","i"]}}"#),
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"outcome":[true,1]}}"#),
            // null where an Option is, and where none is.
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"task":null,"outcome":null,"advantages":null}}"#),
            format!(r#"{{"id":"a","group":"g","steps":[{step}],"iteration":null}}"#),
            r#"{"id":"a","group":"g","steps":[{"observation":"o","action":null,"reward":1}]}"#.into(),
            // Copies, per-function rewards and the source, as the lean form keeps them.
            r#"{"id":"a","group":"g","steps":[{"observation":"o","action":"x","reward":1,"copies":3}],"outcome":{"success":true,"rewards":{"f":1,"g":null,"f":2}},"source":"play"}"#.into(),
            r#"[1]"#.into(),
            r#"{"id":"a","group":"g","steps":[]} x"#.into(),
        ] {
            agree(&line);
        }
    }

    /// A JSON value of any type, some of them hard to read: escapes, a lone surrogate, numbers at and past the
    /// integer types' ends and out of f64's range.
    fn any_json() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            prop::sample::select(vec![
                "0",
                "1",
                "-1",
                "2.5",
                "1e400",
                "-0.0",
                "4294967296",
                "18446744073709551615",
                "18446744073709551616",
                "-9223372036854775809",
            ])
            .prop_map(str::to_owned),
            prop::sample::select(vec![
                r#""""#,
                r#""plain""#,
                r#""Back to Search [SEP] item""#,
                r#""q\"uote\\d\n""#,
                r#""\u00e9\ud83d\ude00""#,
                r#""\ud800""#,
            ])
            .prop_map(str::to_owned),
        ];
        leaf.prop_recursive(3, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((prop::sample::select(vec!["a", "b", "file", "copies"]), inner), 0..4).prop_map(
                    |entries| {
                        let entries: Vec<String> = entries.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
                        format!("{{{}}}", entries.join(","))
                    }
                ),
            ]
        })
    }

    /// How a record writes one of its keys: its right value most of the time (so that about a third of the
    /// lines are whole episodes), else left out, `null`, any value, or the right value and then another.
    fn field(name: &'static str, right: BoxedStrategy<String>) -> BoxedStrategy<Vec<String>> {
        let key = prop_oneof![4 => Just(format!(r#""{name}""#)), 1 => Just(escaped_key(name))];
        (key, right, any_json(), 0..100u8)
            .prop_map(move |(key, right, other, pick)| match pick {
                0 => vec![],
                1 => vec![format!("{key}:null")],
                2 => vec![format!("{key}:{other}")],
                3 => vec![format!("{key}:{right}"), format!(r#""{name}":{other}"#)],
                _ => vec![format!("{key}:{right}")],
            })
            .boxed()
    }

    /// `name` with its first letter written as a `\u` escape.
    fn escaped_key(name: &str) -> String {
        let mut chars = name.chars();
        let first = chars.next().map_or(0, u32::from);
        format!(r#""\u{first:04x}{}""#, chars.as_str())
    }

    /// A record of `fields` and a few unknown keys (`unknown` names), in any order; sometimes an array instead.
    fn record(fields: Vec<BoxedStrategy<Vec<String>>>, unknown: Vec<&'static str>) -> BoxedStrategy<String> {
        let extra = prop::collection::vec((prop::sample::select(unknown), any_json()), 0..3);
        (fields, extra, any::<prop::sample::Index>(), 0..100u8)
            .prop_map(|(fields, extra, shuffle, array)| {
                let mut entries: Vec<String> = fields.into_iter().flatten().collect();
                entries.extend(extra.into_iter().map(|(k, v)| format!(r#""{k}":{v}"#)));
                if !entries.is_empty() {
                    let at = shuffle.index(entries.len());
                    entries.rotate_left(at);
                }
                if array == 0 {
                    format!("[{}]", entries.join(","))
                } else {
                    format!("{{{}}}", entries.join(","))
                }
            })
            .boxed()
    }

    fn string() -> BoxedStrategy<String> {
        prop::sample::select(vec![
            r#""Back to Search [SEP] Page 1""#,
            r#""Instruction: [SEP] find socks""#,
            r#""caf\u00e9 \"x\"""#,
            r#""""#,
        ])
        .prop_map(str::to_owned)
        .boxed()
    }

    fn number() -> BoxedStrategy<String> {
        prop_oneof![(-5i64..15).prop_map(|n| n.to_string()), (-2.0f64..2.0).prop_map(|x| format!("{x:?}"))].boxed()
    }

    fn boolean() -> BoxedStrategy<String> {
        any::<bool>().prop_map(|b| b.to_string()).boxed()
    }

    fn strings() -> BoxedStrategy<String> {
        prop::collection::vec(string(), 0..3).prop_map(|s| format!("[{}]", s.join(","))).boxed()
    }

    fn step() -> BoxedStrategy<String> {
        record(
            vec![
                field("observation", string()),
                field("anchor", string()),
                field("action", string()),
                field("reward", number()),
                field("valid", boolean()),
                field("available_actions", strings()),
                field("tokens", (0u64..50).prop_map(|n| n.to_string()).boxed()),
                field("thought", string()),
                field("logprob", number()),
                field("page", prop::sample::select(vec![r#""item""#, r#""results""#]).prop_map(str::to_owned).boxed()),
                field("state", string()),
            ],
            vec!["copies", "k"],
        )
    }

    fn episode() -> BoxedStrategy<String> {
        let task = record(vec![field("id", string()), field("instruction", string())], vec!["k"]);
        let rewards = prop::collection::vec((prop::sample::select(vec!["f", "g"]), number()), 0..3).prop_map(|e| {
            let e: Vec<String> = e.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
            format!("{{{}}}", e.join(","))
        });
        let outcome = record(
            vec![field("success", boolean()), field("score", number()), field("rewards", rewards.boxed())],
            vec!["k"],
        );
        let steps = prop::collection::vec(step(), 0..4).prop_map(|s| format!("[{}]", s.join(","))).boxed();
        let advantages = prop::collection::vec(number(), 0..3).prop_map(|a| format!("[{}]", a.join(","))).boxed();
        let source = prop_oneof![Just(r#""play""#.to_string()), Just(r#"{"file":"a.jsonl","line":3}"#.to_string())];
        record(
            vec![
                field("id", string()),
                field("group", string()),
                field("iteration", (-3i64..3).prop_map(|n| n.to_string()).boxed()),
                field("task", task),
                field("steps", steps),
                field("outcome", outcome),
                field("advantages", advantages),
                field("source", source.boxed()),
            ],
            vec!["k", "read_from"],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn lean_parse_agrees_with_the_episode_reader(line in episode()) {
            agree(&line);
        }
    }
}
