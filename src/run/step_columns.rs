//! A viewer's steps by column: [`StepColumns`], read through [`StepsRef`].
//!
//! Contract: the columns give back every step pushed, field for field ([`LeanStep`]), in order. A step is its
//! anchor, reward and page in three columns: 11 bytes while the run's rewards take at most 256 distinct values
//! (kept by dictionary: a [`F64Column`]; 18 with rewards of every kind), and less where anchors and pages repeat
//! the step before (a [`RepeatColumn`]: a trainer's single-step episodes, written group by group, share their
//! group's prompt; about 1.5 bytes a step in groups of 8). Its copies and validity are kept apart, by index, only
//! where they are not one valid copy, which is every step of gigscope's own runs and nearly every row of a
//! trainer's (a `LeanStep` in one vector was 24 bytes, a sixth of what a viewer of many short episodes held).
//! [`StepsRef`] is an episode's steps, borrowed from the columns or from a [`LeanStep`] slice alike.

use std::ops::Range;

use super::packed_column::{shrink_slack, F64Column, RepeatColumn};
use super::text_on_disk::{LeanStep, PageId};

/// Steps by column (see the module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct StepColumns {
    anchors: RepeatColumn<u64>,
    rewards: F64Column,
    pages: RepeatColumn<PageId>,
    /// The steps that are not one valid copy, by index.
    odd: Vec<OddStep>,
}

/// A step's copies and validity where they are not one valid copy.
#[derive(Clone, Copy, Debug)]
struct OddStep {
    at: u32,
    copies: u32,
    valid: bool,
}

impl StepColumns {
    pub(super) fn len(&self) -> usize {
        self.anchors.len()
    }

    /// Append `step`; panics past 2³² steps (more than 64 GiB here: a bug, not input to report).
    pub(super) fn push(&mut self, step: LeanStep) {
        if step.copies != 1 || !step.valid {
            let at = u32::try_from(self.len()).expect("StepColumns: more than 2³² steps");
            self.odd.push(OddStep { at, copies: step.copies, valid: step.valid });
        }
        self.anchors.push(step.anchor);
        self.rewards.push(step.reward);
        self.pages.push(step.page);
    }

    /// Give back the room the columns grew beyond what they hold, where that is more than a quarter.
    pub(super) fn shrink_slack(&mut self) {
        self.anchors.shrink_slack();
        self.rewards.shrink_slack();
        self.pages.shrink_slack();
        shrink_slack(&mut self.odd);
    }

    /// Steps `range`, borrowed.
    pub(super) fn slice(&self, range: Range<usize>) -> StepsRef<'_> {
        assert!(range.start <= range.end && range.end <= self.len(), "StepColumns::slice: out of range");
        StepsRef { steps: Steps::Columns { columns: self, start: range.start, len: range.len() } }
    }

    /// Step `i` (below [`Self::len`]).
    fn step(&self, i: usize) -> LeanStep {
        let (copies, valid) = match self.odd.binary_search_by_key(&i, |odd| odd.at as usize) {
            Ok(found) => (self.odd[found].copies, self.odd[found].valid),
            Err(_) => (1, true),
        };
        LeanStep { anchor: self.anchors.get(i), reward: self.rewards.get(i), copies, page: self.pages.get(i), valid }
    }
}

/// An episode's steps, borrowed: each a [`LeanStep`], given by value.
#[derive(Clone, Copy)]
pub struct StepsRef<'a> {
    steps: Steps<'a>,
}

#[derive(Clone, Copy)]
enum Steps<'a> {
    Slice(&'a [LeanStep]),
    Columns { columns: &'a StepColumns, start: usize, len: usize },
}

impl<'a> From<&'a [LeanStep]> for StepsRef<'a> {
    fn from(steps: &'a [LeanStep]) -> StepsRef<'a> {
        StepsRef { steps: Steps::Slice(steps) }
    }
}

impl<'a> StepsRef<'a> {
    pub fn len(&self) -> usize {
        match self.steps {
            Steps::Slice(steps) => steps.len(),
            Steps::Columns { len, .. } => len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Step `t`, when there is one.
    pub fn get(&self, t: usize) -> Option<LeanStep> {
        (t < self.len()).then(|| self.at(t))
    }

    /// Step `t`; panics when `t` is not below [`Self::len`], as indexing does.
    pub fn at(&self, t: usize) -> LeanStep {
        match self.steps {
            Steps::Slice(steps) => steps[t],
            Steps::Columns { columns, start, len } => {
                assert!(t < len, "StepsRef::at: step {t} of {len}");
                columns.step(start + t)
            }
        }
    }

    pub fn first(&self) -> Option<LeanStep> {
        self.get(0)
    }

    /// The steps in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = LeanStep> + ExactSizeIterator + Clone + 'a {
        let steps = *self;
        (0..steps.len()).map(move |t| steps.at(t))
    }
}

/// Steps are the same when every step is, wherever they are kept.
impl PartialEq for StepsRef<'_> {
    fn eq(&self, other: &StepsRef<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for StepsRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step() -> impl Strategy<Value = LeanStep> {
        (
            any::<u64>(),
            prop_oneof![Just(0.0), Just(-0.0), Just(1.0), any::<f64>()],
            0u32..4,
            any::<PageId>(),
            any::<bool>(),
        )
            .prop_map(|(anchor, reward, copies, page, valid)| LeanStep { anchor, reward, copies, page, valid })
    }

    /// Bit for bit, so that −0.0 and NaN rewards are held to what was pushed.
    fn bits(step: LeanStep) -> (u64, u64, u32, PageId, bool) {
        (step.anchor, step.reward.to_bits(), step.copies, step.page, step.valid)
    }

    proptest! {
        #[test]
        fn the_columns_give_back_every_step_pushed_and_any_range_of_them(
            steps in prop::collection::vec(step(), 0..64),
            cut in any::<prop::sample::Index>(),
            len in any::<prop::sample::Index>(),
        ) {
            let mut columns = StepColumns::default();
            steps.iter().for_each(|&s| columns.push(s));
            columns.shrink_slack();
            let start = cut.index(steps.len() + 1);
            let end = start + len.index(steps.len() - start + 1);
            let part = columns.slice(start..end);
            let want: Vec<_> = steps[start..end].iter().copied().map(bits).collect();
            prop_assert_eq!(part.iter().map(bits).collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(part.iter().rev().map(bits).collect::<Vec<_>>(), want.iter().rev().copied().collect::<Vec<_>>());
            prop_assert_eq!((0..part.len()).map(|t| bits(part.at(t))).collect::<Vec<_>>(), want);
            prop_assert_eq!(part.get(part.len()), None);
            prop_assert_eq!(part.len(), end - start);
        }
    }
}
