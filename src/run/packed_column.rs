//! Columns that keep numbers in fewer bytes than their type where the values allow: [`U32Column`] (each value
//! in 1, 2 or 4 bytes, the narrowest width that holds every value so far), [`OffsetColumn`] (ascending offsets
//! as the differences between them, in a `U32Column`, with every 32nd offset in full), [`F64Column`] (each
//! distinct value once and a small code a value, while there are few distinct values; the values themselves
//! after) and [`RepeatColumn`] (a value that repeats the one before it as a bit).
//!
//! Contract: a column gives back every value pushed (or set) at its index, bit for bit (a `-0.0` or a NaN's
//! payload included), whatever width it has grown to. Widening happens on the push or set that needs it and
//! costs one pass over the column; a column never narrows again.
//!
//! Why: a viewer of a run of many short episodes holds a handful of numbers an episode and a step. Most are
//! small (a group's index, a line's length, a token count) or repeat (rewards of 0 and 1, a few shaped values),
//! and kept at their type's full width they were about a quarter of everything it held.

use foldhash::{HashMap, HashMapExt};

/// Give back the room `column` grew beyond what it holds, where that is more than a quarter: grown by doubling,
/// a column ends up to twice its size.
pub fn shrink_slack<T>(column: &mut Vec<T>) {
    if column.capacity() - column.len() > column.len() / 4 {
        column.shrink_to_fit();
    }
}

/// `u32` values, each kept in 1, 2 or 4 bytes: the narrowest width that holds every value pushed so far.
#[derive(Clone, Debug, PartialEq)]
pub struct U32Column {
    values: Widths,
}

#[derive(Clone, Debug, PartialEq)]
enum Widths {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Default for U32Column {
    fn default() -> U32Column {
        U32Column { values: Widths::U8(Vec::new()) }
    }
}

/// The values a width can hold beyond the one below it: 1 for `u8`, 2 for `u16`, 4 for `u32`.
fn bytes_for(value: u32) -> usize {
    match value {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        _ => 4,
    }
}

/// `values` into a column of a wider type, keeping the room they had.
fn widened<N: Copy, W: From<N>>(values: &[N], capacity: usize) -> Vec<W> {
    let mut wide = Vec::with_capacity(capacity);
    wide.extend(values.iter().map(|&v| W::from(v)));
    wide
}

impl U32Column {
    pub fn len(&self) -> usize {
        match &self.values {
            Widths::U8(v) => v.len(),
            Widths::U16(v) => v.len(),
            Widths::U32(v) => v.len(),
        }
    }

    /// Value `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn get(&self, i: usize) -> u32 {
        match &self.values {
            Widths::U8(v) => u32::from(v[i]),
            Widths::U16(v) => u32::from(v[i]),
            Widths::U32(v) => v[i],
        }
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + DoubleEndedIterator + Clone + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The sum of values `range`, in one pass over the values at their width.
    pub fn sum(&self, range: std::ops::Range<usize>) -> u64 {
        fn add<T: Copy + Into<u64>>(values: &[T]) -> u64 {
            values.iter().map(|&v| v.into()).sum()
        }
        match &self.values {
            Widths::U8(v) => add(&v[range]),
            Widths::U16(v) => add(&v[range]),
            Widths::U32(v) => add(&v[range]),
        }
    }

    /// The bytes each value takes now.
    pub fn width(&self) -> usize {
        match &self.values {
            Widths::U8(_) => 1,
            Widths::U16(_) => 2,
            Widths::U32(_) => 4,
        }
    }

    /// Widen the column, if it must, to hold `value`.
    fn make_room_for(&mut self, value: u32) {
        if bytes_for(value) <= self.width() {
            return;
        }
        self.values = match (&self.values, bytes_for(value)) {
            (Widths::U8(v), 2) => Widths::U16(widened(v, v.capacity())),
            (Widths::U8(v), _) => Widths::U32(widened(v, v.capacity())),
            (Widths::U16(v), _) => Widths::U32(widened(v, v.capacity())),
            (Widths::U32(_), _) => unreachable!("a u32 column holds every u32"),
        };
    }

    pub fn push(&mut self, value: u32) {
        self.make_room_for(value);
        // Each cast is lossless: the column is at least as wide as the value.
        match &mut self.values {
            Widths::U8(v) => v.push(value as u8),
            Widths::U16(v) => v.push(value as u16),
            Widths::U32(v) => v.push(value),
        }
    }

    /// Set value `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn set(&mut self, i: usize, value: u32) {
        self.make_room_for(value);
        match &mut self.values {
            Widths::U8(v) => v[i] = value as u8,
            Widths::U16(v) => v[i] = value as u16,
            Widths::U32(v) => v[i] = value,
        }
    }

    /// Lengthen the column to `len` with copies of `value` (never shortens it).
    pub fn extend_to(&mut self, len: usize, value: u32) {
        self.make_room_for(value);
        match &mut self.values {
            Widths::U8(v) => v.resize(len.max(v.len()), value as u8),
            Widths::U16(v) => v.resize(len.max(v.len()), value as u16),
            Widths::U32(v) => v.resize(len.max(v.len()), value),
        }
    }

    /// Room for `more` values at the present width.
    pub fn reserve_exact(&mut self, more: usize) {
        match &mut self.values {
            Widths::U8(v) => v.reserve_exact(more),
            Widths::U16(v) => v.reserve_exact(more),
            Widths::U32(v) => v.reserve_exact(more),
        }
    }

    /// The values the column has room for without growing.
    pub fn capacity(&self) -> usize {
        match &self.values {
            Widths::U8(v) => v.capacity(),
            Widths::U16(v) => v.capacity(),
            Widths::U32(v) => v.capacity(),
        }
    }

    /// Give back the room grown beyond what is held, where that is more than a quarter.
    pub fn shrink_slack(&mut self) {
        match &mut self.values {
            Widths::U8(v) => shrink_slack(v),
            Widths::U16(v) => shrink_slack(v),
            Widths::U32(v) => shrink_slack(v),
        }
    }
}

impl Extend<u32> for U32Column {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, values: I) {
        values.into_iter().for_each(|v| self.push(v));
    }
}

impl FromIterator<u32> for U32Column {
    fn from_iter<I: IntoIterator<Item = u32>>(values: I) -> U32Column {
        let mut column = U32Column::default();
        column.extend(values);
        column
    }
}

/// Ascending `u32` offsets (where each part of a list starts, and where the last one ends), kept as the
/// differences between neighbours in a [`U32Column`] with every [`OffsetColumn::CHECKPOINT`]th offset in full:
/// 1 byte an offset where parts are under 256 long (an episode's steps, an anchor group's members) instead of 4.
/// Reading an offset adds up at most `CHECKPOINT - 1` differences; reading them in order adds one each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OffsetColumn {
    /// Offset `i` less offset `i - 1` (0 for the first, which is the first checkpoint).
    differences: U32Column,
    /// Offset `k · CHECKPOINT`, for every `k`.
    checkpoints: Vec<u32>,
}

impl OffsetColumn {
    pub const CHECKPOINT: usize = 32;

    pub fn len(&self) -> usize {
        self.differences.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn get(&self, i: usize) -> u32 {
        let checkpoint = i / Self::CHECKPOINT;
        assert!(i < self.len(), "OffsetColumn::get: offset {i} of {}", self.len());
        let since = self.differences.sum(checkpoint * Self::CHECKPOINT + 1..i + 1);
        // Offsets are u32, so the differences since a checkpoint add up to one.
        (u64::from(self.checkpoints[checkpoint]) + since) as u32
    }

    pub fn last(&self) -> Option<u32> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Part `i`: from offset `i` to offset `i + 1` (`i + 1` below [`Self::len`]).
    pub fn part(&self, i: usize) -> std::ops::Range<usize> {
        let start = self.get(i) as usize;
        start..start + self.part_len(i) as usize
    }

    /// The length of part `i` (offset `i + 1` less offset `i`).
    pub fn part_len(&self, i: usize) -> u32 {
        self.differences.get(i + 1)
    }

    /// The last offset at or below `value`, as (its index, the offset), as `partition_point(|o| o <= value) - 1`
    /// finds it in a list; `None` when the first offset is above `value` or there is none.
    pub fn last_at_or_below(&self, value: u32) -> Option<(usize, u32)> {
        let checkpoint = self.checkpoints.partition_point(|&c| c <= value).checked_sub(1)?;
        let (mut i, mut offset) = (checkpoint * Self::CHECKPOINT, self.checkpoints[checkpoint]);
        while i + 1 < self.len() && offset + self.differences.get(i + 1) <= value {
            i += 1;
            offset += self.differences.get(i);
        }
        Some((i, offset))
    }

    /// Append `offset`; panics when it is below the last one (offsets ascend: a bug, not input to report).
    pub fn push(&mut self, offset: u32) {
        let last = self.last().unwrap_or(0);
        assert!(offset >= last || self.is_empty(), "OffsetColumn: offset {offset} after {last}");
        if self.len().is_multiple_of(Self::CHECKPOINT) {
            self.checkpoints.push(offset);
        }
        self.differences.push(if self.is_empty() { 0 } else { offset - last });
    }

    /// The offsets in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let first = self.checkpoints.first().copied().unwrap_or(0);
        self.differences.iter().scan(first, |offset, difference| {
            *offset += difference;
            Some(*offset)
        })
    }

    /// Room for `more` offsets at the present width.
    pub fn reserve_exact(&mut self, more: usize) {
        self.differences.reserve_exact(more);
        self.checkpoints.reserve_exact(more / Self::CHECKPOINT + 1);
    }

    /// The offsets the column has room for without growing.
    pub fn capacity(&self) -> usize {
        self.differences.capacity()
    }

    /// Give back the room grown beyond what is held, where that is more than a quarter.
    pub fn shrink_slack(&mut self) {
        self.differences.shrink_slack();
        shrink_slack(&mut self.checkpoints);
    }
}

impl Extend<u32> for OffsetColumn {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, offsets: I) {
        offsets.into_iter().for_each(|o| self.push(o));
    }
}

impl FromIterator<u32> for OffsetColumn {
    fn from_iter<I: IntoIterator<Item = u32>>(offsets: I) -> OffsetColumn {
        let mut column = OffsetColumn::default();
        column.extend(offsets);
        column
    }
}

/// `f64` values by dictionary while the column has at most [`F64Column::PALETTE_LIMIT`] distinct values (by bit
/// pattern): each distinct value once, and each value its index among them in a [`U32Column`] (1 byte while
/// there are at most 256, 2 after). Past the limit the values themselves (a palette of that many values with its
/// index would cost more than it saves): as `f32`, 4 bytes each, while every value is one bit for bit (a
/// trainer's float32 numbers: TRL's and verl's advantages), else 8 bytes each.
#[derive(Clone, Debug)]
pub struct F64Column {
    values: F64Values,
}

#[derive(Clone, Debug)]
enum F64Values {
    Palette { distinct: Vec<f64>, code_of: HashMap<u64, u32>, codes: U32Column },
    Single(Vec<f32>),
    Plain(Vec<f64>),
}

/// `values` in a list made with room for `room` of them: a column leaving one form for another keeps the
/// room it had made.
fn with_room<T>(room: usize, values: impl Iterator<Item = T>) -> Vec<T> {
    let mut list = Vec::with_capacity(room);
    list.extend(values);
    list
}

/// `value` as an `f32` that widens back to it bit for bit, if there is one.
fn as_f32(value: f64) -> Option<f32> {
    let narrow = value as f32;
    (f64::from(narrow).to_bits() == value.to_bits()).then_some(narrow)
}

impl Default for F64Column {
    fn default() -> F64Column {
        F64Column {
            values: F64Values::Palette { distinct: Vec::new(), code_of: HashMap::new(), codes: U32Column::default() },
        }
    }
}

impl F64Column {
    /// The most distinct values a column keeps by dictionary.
    pub const PALETTE_LIMIT: usize = 4096;

    pub fn len(&self) -> usize {
        match &self.values {
            F64Values::Palette { codes, .. } => codes.len(),
            F64Values::Single(v) => v.len(),
            F64Values::Plain(v) => v.len(),
        }
    }

    /// Value `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn get(&self, i: usize) -> f64 {
        match &self.values {
            F64Values::Palette { distinct, codes, .. } => distinct[codes.get(i) as usize],
            F64Values::Single(v) => f64::from(v[i]),
            F64Values::Plain(v) => v[i],
        }
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = f64> + DoubleEndedIterator + Clone + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn push(&mut self, value: f64) {
        match &mut self.values {
            F64Values::Palette { distinct, code_of, codes } => {
                let code = match code_of.get(&value.to_bits()) {
                    Some(&code) => code,
                    None if distinct.len() < F64Column::PALETTE_LIMIT => {
                        let code = distinct.len() as u32;
                        distinct.push(value);
                        code_of.insert(value.to_bits(), code);
                        code
                    }
                    None => {
                        let room = codes.capacity().max(codes.len() + 1);
                        let single: Option<Vec<f32>> = distinct.iter().map(|&v| as_f32(v)).collect();
                        self.values = match single {
                            Some(single) => {
                                F64Values::Single(with_room(room, codes.iter().map(|c| single[c as usize])))
                            }
                            None => F64Values::Plain(with_room(room, codes.iter().map(|c| distinct[c as usize]))),
                        };
                        self.push(value);
                        return;
                    }
                };
                codes.push(code);
            }
            F64Values::Single(v) => match as_f32(value) {
                Some(narrow) => v.push(narrow),
                None => {
                    let mut values = with_room(v.capacity().max(v.len() + 1), v.iter().map(|&n| f64::from(n)));
                    values.push(value);
                    self.values = F64Values::Plain(values);
                }
            },
            F64Values::Plain(v) => v.push(value),
        }
    }

    /// Room for `more` values at the present width.
    pub fn reserve_exact(&mut self, more: usize) {
        match &mut self.values {
            F64Values::Palette { codes, .. } => codes.reserve_exact(more),
            F64Values::Single(v) => v.reserve_exact(more),
            F64Values::Plain(v) => v.reserve_exact(more),
        }
    }

    /// How many values the column holds room for at the present width.
    pub fn capacity(&self) -> usize {
        match &self.values {
            F64Values::Palette { codes, .. } => codes.capacity(),
            F64Values::Single(v) => v.capacity(),
            F64Values::Plain(v) => v.capacity(),
        }
    }

    /// Give back the room grown beyond what is held, where that is more than a quarter.
    pub fn shrink_slack(&mut self) {
        match &mut self.values {
            F64Values::Palette { distinct, codes, .. } => {
                shrink_slack(distinct);
                codes.shrink_slack();
            }
            F64Values::Single(v) => shrink_slack(v),
            F64Values::Plain(v) => shrink_slack(v),
        }
    }
}

/// Columns are equal when their values are, bit for bit, however each keeps them.
impl PartialEq for F64Column {
    fn eq(&self, other: &F64Column) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Extend<f64> for F64Column {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, values: I) {
        values.into_iter().for_each(|v| self.push(v));
    }
}

impl FromIterator<f64> for F64Column {
    fn from_iter<I: IntoIterator<Item = f64>>(values: I) -> F64Column {
        let mut column = F64Column::default();
        column.extend(values);
        column
    }
}

/// Values that often repeat the one just before them (the anchor and page of each step of single-step episodes,
/// written group by group: a group's completions share their prompt): each value that differs from the one
/// before it once, and a bit a value that says whether it does, with the count of such values before every 64
/// bits. A value that repeats costs those bits alone (under 0.2 bytes), one that differs its size besides.
#[derive(Clone, Debug)]
pub struct RepeatColumn<T> {
    /// Each value that differs from the one before it, and the first.
    changes: Vec<T>,
    /// Bit `i % 64` of word `i / 64` is set where value `i` is one of `changes`.
    changed: Vec<u64>,
    /// How many of `changes` come before each word of `changed`.
    changes_before: Vec<u32>,
    len: usize,
}

impl<T> Default for RepeatColumn<T> {
    fn default() -> Self {
        RepeatColumn { changes: Vec::new(), changed: Vec::new(), changes_before: Vec::new(), len: 0 }
    }
}

impl<T: Copy + PartialEq> RepeatColumn<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Value `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len, "RepeatColumn::get: value {i} of {}", self.len);
        let (word, bit) = (i / 64, i % 64);
        let up_to = (self.changed[word] & (u64::MAX >> (63 - bit))).count_ones();
        // Value 0 is always a change, so at least one change is counted up to `i`.
        self.changes[(self.changes_before[word] + up_to) as usize - 1]
    }

    /// Append `value`; panics past 2³² changes (a column of that many is a bug here, not input to report).
    pub fn push(&mut self, value: T) {
        let (word, bit) = (self.len / 64, self.len % 64);
        if bit == 0 {
            let before = u32::try_from(self.changes.len()).expect("RepeatColumn: more than 2³² changes");
            self.changes_before.push(before);
            self.changed.push(0);
        }
        if self.changes.last().is_none_or(|&last| last != value) {
            self.changed[word] |= 1 << bit;
            self.changes.push(value);
        }
        self.len += 1;
    }

    /// Give back the room grown beyond what is held, where that is more than a quarter.
    pub fn shrink_slack(&mut self) {
        shrink_slack(&mut self.changes);
        shrink_slack(&mut self.changed);
        shrink_slack(&mut self.changes_before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Values of every width, small ones most often, as a column sees them.
    fn u32_value() -> impl Strategy<Value = u32> {
        prop_oneof![0u32..=0xff, 0x100u32..=0xffff, any::<u32>(), Just(u32::MAX)]
    }

    /// An edit of a column: a push, or a set of an index (taken modulo the length, skipped on an empty column).
    #[derive(Clone, Debug)]
    enum Edit {
        Push(u32),
        Set(prop::sample::Index, u32),
        ExtendTo(usize, u32),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            4 => u32_value().prop_map(Edit::Push),
            2 => (any::<prop::sample::Index>(), u32_value()).prop_map(|(i, v)| Edit::Set(i, v)),
            1 => (0usize..8, u32_value()).prop_map(|(more, v)| Edit::ExtendTo(more, v)),
        ]
    }

    fn f64_value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => prop::sample::select(vec![0.0, -0.0, 1.0, -1.0, 0.5, f64::NAN, -f64::NAN, f64::INFINITY]),
            1 => any::<f64>(),
            1 => (0u64..8).prop_map(|n| f64::from_bits(0x7ff8_0000_0000_0000 | (n + 1))),
        ]
    }

    proptest! {
        #[test]
        fn a_u32_column_gives_back_what_was_pushed_and_set_in_the_narrowest_width(
            edits in prop::collection::vec(edit(), 0..200),
        ) {
            let (mut column, mut want) = (U32Column::default(), Vec::<u32>::new());
            for edit in edits {
                match edit {
                    Edit::Push(v) => {
                        column.push(v);
                        want.push(v);
                    }
                    Edit::Set(i, v) if !want.is_empty() => {
                        let i = i.index(want.len());
                        column.set(i, v);
                        want[i] = v;
                    }
                    Edit::Set(..) => {}
                    Edit::ExtendTo(more, v) => {
                        column.extend_to(want.len() + more, v);
                        want.resize(want.len() + more, v);
                    }
                }
                prop_assert_eq!(column.len(), want.len());
            }
            column.shrink_slack();
            prop_assert_eq!(column.iter().collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(column.iter().rev().collect::<Vec<_>>(), want.iter().rev().copied().collect::<Vec<_>>());
            // Every value ever written widened the column to it: it is at least as wide as the largest value held,
            // and built from what it holds alone, exactly as wide.
            let largest = want.iter().copied().max().map_or(1, bytes_for);
            prop_assert!(column.width() >= largest);
            prop_assert_eq!(want.iter().copied().collect::<U32Column>().width(), largest);
        }

        #[test]
        fn an_f64_column_gives_back_every_value_bit_for_bit_by_dictionary_or_plain(
            values in prop::collection::vec(f64_value(), 0..300),
            spread in 0usize..3,
        ) {
            // A spread of 2 pushes more distinct values than the palette keeps, first, so that later values are
            // kept plain (as f32 until one is not an f32: these are, `values` mostly not); a spread of 1 ends just
            // at the limit. Values are pushed before the spread as well as after, so that the palette's values
            // are carried over into either plain form.
            let spread: Vec<f64> = match spread {
                0 => Vec::new(),
                1 => (0..F64Column::PALETTE_LIMIT - 16).map(|i| i as f64 + 0.25).collect(),
                _ => (0..F64Column::PALETTE_LIMIT + 1).map(|i| i as f64 + 0.25).collect(),
            };
            let (before, after) = values.split_at(values.len() / 2);
            let mut want: Vec<f64> = before.to_vec();
            want.extend(spread);
            want.extend(after);
            let column: F64Column = want.iter().copied().collect();
            let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&column.iter().collect::<Vec<_>>()), bits(&want));
            let distinct: std::collections::HashSet<u64> = want.iter().map(|v| v.to_bits()).collect();
            let kept_as = match column.values {
                F64Values::Palette { .. } => "palette",
                F64Values::Single(_) => "f32",
                F64Values::Plain(_) => "f64",
            };
            let want_kept_as = if distinct.len() <= F64Column::PALETTE_LIMIT {
                "palette"
            } else if want.iter().all(|&v| as_f32(v).is_some()) {
                "f32"
            } else {
                "f64"
            };
            prop_assert_eq!(kept_as, want_kept_as);
            let mut shrunk = column.clone();
            shrunk.shrink_slack();
            prop_assert!(shrunk == column);
        }
    }

    proptest! {
        #[test]
        fn an_offset_column_gives_back_its_offsets_parts_and_the_part_of_any_value(
            first in prop_oneof![Just(0u32), 0u32..1000, Just(u32::MAX / 2)],
            lens in prop::collection::vec(prop_oneof![4 => 0u32..4, 2 => 0u32..300, 1 => 0u32..100_000], 0..120),
            probes in prop::collection::vec(any::<u32>(), 0..20),
        ) {
            let mut want = vec![first];
            for len in lens {
                want.push(want.last().unwrap() + len);
            }
            let column: OffsetColumn = want.iter().copied().collect();
            prop_assert_eq!(column.len(), want.len());
            if want.windows(2).all(|w| w[1] - w[0] < 256) {
                prop_assert_eq!(column.differences.width(), 1, "parts under 256 long take a byte each");
            }
            prop_assert_eq!(column.iter().collect::<Vec<_>>(), want.clone());
            prop_assert_eq!((0..want.len()).map(|i| column.get(i)).collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(column.last(), want.last().copied());
            for i in 0..want.len() - 1 {
                prop_assert_eq!(column.part(i), want[i] as usize..want[i + 1] as usize);
            }
            // Every offset, one either side of it, and arbitrary values: found as a list's binary search finds them.
            let near = want.iter().flat_map(|&o| [o.saturating_sub(1), o, o.saturating_add(1)]);
            for value in near.chain(probes) {
                let found = want.partition_point(|&o| o <= value).checked_sub(1).map(|i| (i, want[i]));
                prop_assert_eq!(column.last_at_or_below(value), found, "value {}", value);
            }
        }
    }

    proptest! {
        /// Every value is given back at its index, runs of repeats or not, on either side of a word's 64 bits.
        #[test]
        fn a_repeat_column_gives_back_every_value_and_keeps_each_change_once(
            runs in prop::collection::vec((0u64..4, 1usize..150), 0..40),
        ) {
            let want: Vec<u64> = runs.iter().flat_map(|&(v, n)| std::iter::repeat_n(v, n)).collect();
            let mut column = RepeatColumn::default();
            want.iter().for_each(|&v| column.push(v));
            column.shrink_slack();
            prop_assert_eq!(column.len(), want.len());
            prop_assert_eq!((0..want.len()).map(|i| column.get(i)).collect::<Vec<_>>(), want.clone());
            let changes = want.iter().enumerate().filter(|&(i, v)| i == 0 || want[i - 1] != *v).count();
            prop_assert_eq!(column.changes.len(), changes);
        }
    }

    #[test]
    fn a_column_of_a_few_distinct_values_keeps_one_byte_a_value() {
        let column: F64Column = (0..10_000).map(|i| f64::from(i % 3 == 0)).collect();
        match &column.values {
            F64Values::Palette { distinct, codes, .. } => {
                assert_eq!(distinct, &[1.0, 0.0]);
                assert_eq!(codes.width(), 1);
            }
            F64Values::Single(_) | F64Values::Plain(_) => panic!("two distinct values kept plain"),
        }
    }
}
