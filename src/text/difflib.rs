//! Python's `difflib.SequenceMatcher(None, a, b).ratio()`, bit for bit.
//!
//! GiGPO's similarity-based anchor grouping compares observations with difflib, so gigscope must put the
//! threshold at exactly the same place. This port follows CPython's algorithm step by step:
//!
//! - sequences are Unicode code points (Rust `char`s, which are exactly Python's `str` elements);
//! - `b2j` maps each element of `b` to its positions; with `autojunk` (the default) and `len(b) >= 200`,
//!   elements occurring more than `1 + len(b) // 100` times are "popular" and dropped from `b2j`, so a
//!   matching block is never *seeded* by them (it may still be extended over them);
//! - `find_longest_match` keeps the first (lowest `i`, then lowest `j`) longest block, then extends it
//!   backwards and forwards over equal elements (there are no junk elements since `isjunk` is `None`);
//! - `get_matching_blocks` recurses on the two sides of each block; the ratio is `2.0 * M / (len a + len b)`
//!   with `M` the total size of the blocks, or `1.0` when both are empty.
//!
//! For clustering, the same `b` (a cluster's first member) is compared with many `a`s, so `b` is prepared once
//! ([`Reference`]) and the scratch buffers are reused ([`Matcher`]). [`Matcher::similar`] first applies
//! difflib's own upper bounds (`real_quick_ratio`, `quick_ratio`), which can only rule a pair out when the
//! exact ratio is below θ too: the ratio is `2.0 * m / L` with the same `L` for all three, and floating-point
//! division and multiplication are monotone, so a larger match count never gives a smaller value. For the same
//! reason it stops finding matching blocks as soon as their total reaches the fewest matches that make θ, or
//! can no longer reach it. When no element of `b` is popular, one pass of `a` through a suffix automaton of `b`
//! finds the longest block over the whole of `b` for every sub-range of `a` the recursion asks about; that
//! block answers a sub-range of `b` too whenever it lies inside it, the common case for the similar pages that
//! clustering compares (see [`SuffixAutomaton`] for why it is the same block); other sub-ranges of `b` take
//! CPython's loop.

use std::collections::HashMap;

/// Marks an element of `a` that does not occur in `b` at all.
const ABSENT: u32 = u32::MAX;

/// Python's `SequenceMatcher(None, a, b).ratio()`.
pub fn ratio(a: &str, b: &str) -> f64 {
    let mut chars = Vec::new();
    code_points_into(a, &mut chars);
    Matcher::default().ratio(&chars, &Reference::new(b))
}

/// The elements Python sees in `s` (its code points) into `out`, replacing what it held; ASCII text, the
/// common case, is copied byte by byte, which the compiler vectorises.
fn code_points_into(s: &str, out: &mut Vec<char>) {
    out.clear();
    if s.is_ascii() {
        out.extend(s.bytes().map(char::from));
    } else {
        out.extend(s.chars());
    }
}

/// The `a` side of thresholded comparisons, prepared once for all the `b`s it meets: its elements and how
/// often each occurs, so that `quick_ratio`'s bound costs one step per distinct element of `b` rather than one
/// per element of `a`.
#[derive(Clone, Debug)]
pub struct Candidate {
    chars: Vec<char>,
    ascii_counts: [u32; 128],
    other_counts: HashMap<char, u32>,
}

impl Default for Candidate {
    fn default() -> Self {
        Candidate { chars: Vec::new(), ascii_counts: [0; 128], other_counts: HashMap::new() }
    }
}

impl Candidate {
    pub fn new(a: &str) -> Self {
        let mut candidate = Candidate::default();
        candidate.set(a);
        candidate
    }

    /// Prepare `a`, reusing this candidate's buffers.
    pub fn set(&mut self, a: &str) {
        code_points_into(a, &mut self.chars);
        self.ascii_counts = [0; 128];
        self.other_counts.clear();
        if a.is_ascii() {
            for &b in a.as_bytes() {
                self.ascii_counts[usize::from(b)] += 1;
            }
            return;
        }
        for &c in &self.chars {
            if c.is_ascii() {
                self.ascii_counts[c as usize] += 1;
            } else {
                *self.other_counts.entry(c).or_insert(0) += 1;
            }
        }
    }

    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    fn count(&self, c: char) -> u32 {
        if c.is_ascii() {
            self.ascii_counts[c as usize]
        } else {
            self.other_counts.get(&c).copied().unwrap_or(0)
        }
    }
}

/// The `b` side of a comparison, prepared once: its elements, their positions (`b2j` after autojunk) and
/// their full counts (for `quick_ratio`).
#[derive(Clone, Debug)]
pub struct Reference {
    chars: Vec<char>,
    /// Slot of each ASCII element of `b` (`ABSENT` if it does not occur); avoids hashing for ASCII text.
    ascii_slot: [u32; 128],
    other_slot: HashMap<char, u32>,
    /// Each slot's element.
    elements: Vec<char>,
    /// Occurrences of each slot's element in `b`, popular or not.
    counts: Vec<u32>,
    /// `positions[starts[s]..starts[s + 1]]`: ascending positions of slot `s` in `b`, empty when popular.
    starts: Vec<u32>,
    positions: Vec<u32>,
    /// `b`'s suffix automaton, when no element of `b` is popular and it is small (see [`SuffixAutomaton`]).
    automaton: Option<SuffixAutomaton>,
}

impl Reference {
    pub fn new(b: &str) -> Self {
        let mut chars = Vec::with_capacity(b.len());
        code_points_into(b, &mut chars);
        let mut reference = Reference {
            ascii_slot: [ABSENT; 128],
            other_slot: HashMap::new(),
            elements: Vec::new(),
            counts: Vec::new(),
            starts: Vec::new(),
            positions: Vec::new(),
            chars: Vec::new(),
            automaton: None,
        };
        let mut slots = Vec::with_capacity(chars.len());
        for &c in &chars {
            let slot = match reference.slot(c) {
                ABSENT => {
                    let slot = reference.counts.len() as u32;
                    reference.counts.push(0);
                    reference.elements.push(c);
                    if c.is_ascii() {
                        reference.ascii_slot[c as usize] = slot;
                    } else {
                        reference.other_slot.insert(c, slot);
                    }
                    slot
                }
                slot => slot,
            };
            reference.counts[slot as usize] += 1;
            slots.push(slot);
        }
        // CPython: `if self.autojunk and n >= 200: ntest = n // 100 + 1; popular = len(idxs) > ntest`.
        let n = chars.len();
        let popular_above = if n >= 200 { n / 100 + 1 } else { usize::MAX };
        let kept: Vec<u32> = reference.counts.iter().map(|&c| if c as usize > popular_above { 0 } else { c }).collect();
        reference.starts.reserve(kept.len() + 1);
        reference.starts.push(0);
        let mut total = 0;
        for &k in &kept {
            total += k;
            reference.starts.push(total);
        }
        // Counting sort of positions by slot keeps each slot's positions ascending.
        reference.positions = vec![0; total as usize];
        let mut fill: Vec<u32> = reference.starts[..kept.len()].to_vec();
        for (j, &slot) in slots.iter().enumerate() {
            if kept[slot as usize] != 0 {
                reference.positions[fill[slot as usize] as usize] = j as u32;
                fill[slot as usize] += 1;
            }
        }
        let popular = kept.iter().zip(&reference.counts).any(|(k, c)| k != c);
        if !popular && 2 * slots.len() * kept.len() <= SuffixAutomaton::MAX_CELLS {
            reference.automaton = Some(SuffixAutomaton::new(&slots, kept.len()));
        }
        reference.chars = chars;
        reference
    }

    /// Number of elements (code points) of `b`.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    fn slot(&self, c: char) -> u32 {
        if c.is_ascii() {
            self.ascii_slot[c as usize]
        } else {
            self.other_slot.get(&c).copied().unwrap_or(ABSENT)
        }
    }

    fn positions(&self, slot: u32) -> &[u32] {
        if slot == ABSENT {
            return &[];
        }
        let s = slot as usize;
        &self.positions[self.starts[s] as usize..self.starts[s + 1] as usize]
    }

    /// The positions of `slot` in `b[blo..bhi]`.
    fn positions_in(&self, slot: u32, blo: u32, bhi: u32) -> &[u32] {
        let positions = self.positions(slot);
        let from = positions.partition_point(|&j| j < blo);
        let to = from + positions[from..].partition_point(|&j| j < bhi);
        &positions[from..to]
    }
}

/// Reusable scratch space for comparisons; one per thread.
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    /// With an automaton, made once per comparison: answers every longest-block query of the comparison.
    walk: Walk,
    /// CPython's `j2len` and `newj2len` as two dense rows indexed by `j + 1`, each entry `(length, row)`:
    /// an entry counts only if it was written by the row just before (rows are numbered across calls), so
    /// nothing is ever cleared.
    j2len: Vec<(u32, u32)>,
    new_j2len: Vec<(u32, u32)>,
    row: u32,
    queue: Vec<(u32, u32, u32, u32)>,
}

impl Matcher {
    /// `SequenceMatcher(None, a, b).ratio()`.
    pub fn ratio(&mut self, a: &[char], b: &Reference) -> f64 {
        calculate_ratio(self.matching_total(a, b), a.len() + b.len())
    }

    /// Whether `SequenceMatcher(None, a, b).ratio() >= theta`, skipping the full computation when difflib's
    /// upper bounds already fall short (exact: see the module documentation).
    pub fn similar(&mut self, a: &Candidate, b: &Reference, theta: f64) -> bool {
        let length = a.chars.len() + b.len();
        if calculate_ratio(a.chars.len().min(b.len()), length) < theta {
            return false;
        }
        // `quick_ratio`'s match count: the size of the multiset intersection of `a` and `b`.
        let quick: usize = b.elements.iter().zip(&b.counts).map(|(&c, &n)| n.min(a.count(c)) as usize).sum();
        if calculate_ratio(quick, length) < theta {
            return false;
        }
        let a = a.chars();
        // The fewest matches that reach θ: at most `quick`, which does.
        let mut needed = ((theta * length as f64 / 2.0).ceil() as usize).min(quick);
        while needed > 0 && calculate_ratio(needed - 1, length) >= theta {
            needed -= 1;
        }
        while calculate_ratio(needed, length) < theta {
            needed += 1;
        }
        self.matching_blocks_reach(a, b, needed)
    }

    /// Total size of `get_matching_blocks()`.
    fn matching_total(&mut self, a: &[char], b: &Reference) -> usize {
        self.matching_blocks(a, b, None)
    }

    /// Whether the total size of `get_matching_blocks()` reaches `needed`.
    fn matching_blocks_reach(&mut self, a: &[char], b: &Reference, needed: usize) -> bool {
        self.matching_blocks(a, b, Some(needed)) >= needed
    }

    /// The blocks' total size; with `enough`, found block by block only until the total reaches it or can no
    /// longer reach it (then the total so far is returned, which tells which). The blocks' order does not
    /// change their sum, so the recursion is a plain stack; a pending range `(alo, ahi, blo, bhi)` can add at
    /// most `min(ahi - alo, bhi - blo)`, and the sum of those bounds decides early that `enough` is out of
    /// reach.
    fn matching_blocks(&mut self, a: &[char], b: &Reference, enough: Option<usize>) -> usize {
        let lb = b.len();
        if self.j2len.len() < lb + 1 {
            self.j2len.resize(lb + 1, (0, 0));
            self.new_j2len.resize(lb + 1, (0, 0));
        }
        if let Some(automaton) = &b.automaton {
            automaton.walk(a, b, &mut self.walk);
        }
        let bound = |alo: u32, ahi: u32, blo: u32, bhi: u32| (ahi - alo).min(bhi - blo) as usize;
        let mut total = 0;
        let mut pending = a.len().min(lb);
        self.queue.clear();
        self.queue.push((0, a.len() as u32, 0, lb as u32));
        while let Some((alo, ahi, blo, bhi)) = self.queue.pop() {
            if enough.is_some_and(|n| total >= n || total + pending < n) {
                return total;
            }
            pending -= bound(alo, ahi, blo, bhi);
            let (i, j, k) = self.find_longest_match(a, b, alo, ahi, blo, bhi);
            if k > 0 {
                total += k as usize;
                if alo < i && blo < j {
                    self.queue.push((alo, i, blo, j));
                    pending += bound(alo, i, blo, j);
                }
                if i + k < ahi && j + k < bhi {
                    self.queue.push((i + k, ahi, j + k, bhi));
                    pending += bound(i + k, ahi, j + k, bhi);
                }
            }
        }
        total
    }

    /// CPython's `find_longest_match(alo, ahi, blo, bhi)` with `isjunk=None`.
    fn find_longest_match(
        &mut self,
        a: &[char],
        b: &Reference,
        alo: u32,
        ahi: u32,
        blo: u32,
        bhi: u32,
    ) -> (u32, u32, u32) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0u32);
        if self.row > u32::MAX - (ahi - alo) - 2 {
            // Row numbers would wrap: start again from clean rows.
            self.j2len.fill((0, 0));
            self.new_j2len.fill((0, 0));
            self.row = 0;
        }
        // Skip a number so that the first row sees nothing of the previous call's last row.
        self.row += 2;
        let whole = blo == 0 && bhi as usize == b.len();
        // The first longest block between `a[alo..ahi]` and the whole of `b`; when it lies inside
        // `b[blo..bhi]` it is also the range's first longest block (see [`SuffixAutomaton`]).
        let in_range = b.automaton.as_ref().and_then(|automaton| {
            let (i, j, k) = automaton.longest_block(&self.walk, alo, ahi);
            match k {
                0 => Some((alo, blo, 0)),
                _ if j >= blo && j + k <= bhi => Some((i, j, k)),
                _ => None,
            }
        });
        if let Some(block) = in_range {
            (besti, bestj, bestsize) = block;
        } else {
            // Local rows, swapped by reference: swapping the fields themselves costs a store per row.
            let (mut j2len, mut new_j2len) = (self.j2len.as_mut_slice(), self.new_j2len.as_mut_slice());
            let mut row = self.row;
            for i in alo..ahi {
                let slot = b.slot(a[i as usize]);
                let positions = if whole { b.positions(slot) } else { b.positions_in(slot, blo, bhi) };
                for &j in positions {
                    // `k = newj2len[j] = j2len.get(j - 1, 0) + 1`, with index `j + 1` standing for `j`.
                    let (length, written) = j2len[j as usize];
                    let k = if written + 1 == row { length + 1 } else { 1 };
                    new_j2len[j as usize + 1] = (k, row);
                    if k > bestsize {
                        besti = i + 1 - k;
                        bestj = j + 1 - k;
                        bestsize = k;
                    }
                }
                // `j2len = newj2len`.
                std::mem::swap(&mut j2len, &mut new_j2len);
                row += 1;
            }
            self.row = row;
        }

        // Extend over equal elements; with no junk, popular elements count as ordinary ones here.
        let bc = &b.chars;
        while besti > alo && bestj > blo && a[besti as usize - 1] == bc[bestj as usize - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && a[(besti + bestsize) as usize] == bc[(bestj + bestsize) as usize]
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }
}

/// One walk of `a` through `b`'s suffix automaton ([`SuffixAutomaton::walk`]).
#[derive(Clone, Debug, Default)]
struct Walk {
    /// The longest suffix of `a[..=i]` that occurs in `b`: its length, and the first position of `b` where it
    /// ends.
    lens: Vec<u32>,
    ends: Vec<u32>,
    /// Ascending, the `i` where a run of `lens` growing by one stops (the next is not one more) and the last
    /// `i`: within a run the length only grows, so a range's longest match ends at one of these or at the
    /// range's own end.
    stops: Vec<u32>,
}

/// The suffix automaton of `b` (over its slots), used for `find_longest_match` over the whole of `b`.
///
/// CPython's loop keeps the first `(i, j)` in row order whose common-suffix length `k` beats the best so far:
/// the block ending at the first row `i` where the longest suffix of `a[alo..=i]` occurring in `b` is longest,
/// and within that row the smallest end `j`. The automaton gives both in one pass over `a`: the longest suffix
/// occurring in `b` (the matched length) and the first end position of that string in `b` (all strings of a
/// state end at the same positions). This needs every element of `b` to seed a block, so it is only built when
/// no element is popular; the result is then the same block, with no extension left to make.
///
/// For a sub-range `b[blo..bhi]`, the same pass over `a[alo..ahi]` still finds the first longest block of the
/// whole of `b`, `(i, j, k)`. If it lies inside the range, it is the range's answer too: no block inside the
/// range is longer than `k`; none as long ends at an earlier row, or the pass would have met it first; and in
/// row `i` none ends before `j`, the first end of that string in all of `b`. Otherwise the range may hold a
/// shorter block that the pass cannot see, and CPython's loop runs on the range.
#[derive(Clone, Debug)]
struct SuffixAutomaton {
    /// Number of slots: `next[state * width + slot]`.
    width: usize,
    /// Transitions, `NO_STATE` where there is none. Two bytes a cell keep a page's table (tens of KB) in the
    /// first-level cache.
    next: Vec<u16>,
    link: Vec<u32>,
    len: Vec<u32>,
    first_end: Vec<u32>,
    /// The state of each prefix `b[..=e]`: a substring of `b` given by where it ends and its length is found
    /// from there by following suffix links ([`Self::state_of`]).
    prefix_state: Vec<u32>,
}

impl SuffixAutomaton {
    /// Largest transition table built; longer or more varied `b`s use the plain loop. With at least one
    /// cell per state, state numbers stay below `NO_STATE`.
    const MAX_CELLS: usize = 1 << 16;
    const NO_STATE: u16 = u16::MAX;

    fn new(slots: &[u32], width: usize) -> Self {
        let mut automaton = SuffixAutomaton {
            width,
            next: Vec::with_capacity(2 * slots.len().max(1) * width),
            link: Vec::new(),
            len: Vec::new(),
            first_end: Vec::new(),
            prefix_state: Vec::with_capacity(slots.len()),
        };
        automaton.add_state(0, 0, ABSENT);
        let mut last = 0u32;
        for (end, &c) in slots.iter().enumerate() {
            let c = c as usize;
            let cur = automaton.add_state(automaton.len[last as usize] + 1, end as u32, ABSENT);
            automaton.prefix_state.push(cur);
            let mut p = last;
            while p != ABSENT && automaton.next(p, c) == ABSENT {
                automaton.set_next(p, c, cur);
                p = automaton.link[p as usize];
            }
            if p == ABSENT {
                automaton.link[cur as usize] = 0;
            } else {
                let q = automaton.next(p, c);
                if automaton.len[p as usize] + 1 == automaton.len[q as usize] {
                    automaton.link[cur as usize] = q;
                } else {
                    let clone = automaton.add_state(
                        automaton.len[p as usize] + 1,
                        automaton.first_end[q as usize],
                        automaton.link[q as usize],
                    );
                    let (from, to) = (q as usize * width, clone as usize * width);
                    automaton.next.copy_within(from..from + width, to);
                    while p != ABSENT && automaton.next(p, c) == q {
                        automaton.set_next(p, c, clone);
                        p = automaton.link[p as usize];
                    }
                    automaton.link[q as usize] = clone;
                    automaton.link[cur as usize] = clone;
                }
            }
            last = cur;
        }
        automaton
    }

    fn add_state(&mut self, len: u32, first_end: u32, link: u32) -> u32 {
        self.next.resize(self.next.len() + self.width, Self::NO_STATE);
        self.len.push(len);
        self.first_end.push(first_end);
        self.link.push(link);
        (self.len.len() - 1) as u32
    }

    fn next(&self, state: u32, slot: usize) -> u32 {
        match self.next[state as usize * self.width + slot] {
            Self::NO_STATE => ABSENT,
            to => u32::from(to),
        }
    }

    fn set_next(&mut self, state: u32, slot: usize, to: u32) {
        // `MAX_CELLS` keeps state numbers below `NO_STATE`.
        self.next[state as usize * self.width + slot] = to as u16;
    }

    /// The state of `b[end + 1 - len..=end]`: among the suffixes of the prefix `b[..=end]`, whose states are
    /// that prefix's state and its suffix-link ancestors, the one whose lengths include `len`.
    fn state_of(&self, end: u32, len: u32) -> u32 {
        let mut state = self.prefix_state[end as usize];
        while self.len[self.link[state as usize] as usize] >= len {
            state = self.link[state as usize];
        }
        state
    }

    /// The longest suffix of each prefix `a[..=i]` that occurs in `b`, in one pass over `a`, into `walk`.
    ///
    /// While `a` goes on as `b` does after the first end of the current match, the match grows by one and its
    /// first end moves by one (an occurrence of the longer string ending earlier would put one of the shorter
    /// string earlier still), so those stretches, most of a page compared with a similar one, take a
    /// comparison per element; the state is only looked up, from the end and the length, where they stop.
    fn walk(&self, a: &[char], b: &Reference, walk: &mut Walk) {
        let Walk { lens, ends, stops } = walk;
        lens.resize(a.len(), 0);
        ends.resize(a.len(), 0);
        stops.clear();
        // `state` is the match's state when `known`; `end` is its first end in `b` when `matched > 0`.
        let (mut state, mut matched, mut end, mut known) = (0u32, 0u32, 0u32, true);
        for (i, &x) in a.iter().enumerate() {
            if matched > 0 && b.chars.get(end as usize + 1) == Some(&x) {
                (matched, end, known) = (matched + 1, end + 1, false);
            } else {
                let before = matched;
                let c = b.slot(x);
                if c == ABSENT {
                    (state, matched, known) = (0, 0, true);
                } else {
                    if !known {
                        (state, known) = (self.state_of(end, matched), true);
                    }
                    // Every slot occurs in `b`, so the root has a transition for it: the walk always ends.
                    loop {
                        let to = self.next(state, c as usize);
                        if to != ABSENT {
                            (state, matched) = (to, matched + 1);
                            break;
                        }
                        state = self.link[state as usize];
                        matched = self.len[state as usize];
                    }
                    end = self.first_end[state as usize];
                }
                if i > 0 && matched != before + 1 {
                    stops.push(i as u32 - 1);
                }
            }
            (lens[i], ends[i]) = (matched, end);
        }
        stops.extend(a.len().checked_sub(1).map(|last| last as u32));
    }

    /// `(i, j, k)` of the first longest block between `a[alo..ahi]` and the whole of `b`, as CPython's loop
    /// finds it, from [`Self::walk`]'s results for `a`; `(alo, 0, 0)` when they share no element.
    ///
    /// A pass over `a[alo..ahi]` alone would match, at each `i`, the longest suffix of `a[alo..=i]` occurring
    /// in `b`: the whole walk's suffix cut to the range, `min(lens[i], i + 1 - alo)`, because every suffix of a
    /// string that occurs in `b` occurs too. The walk's matches start at `i + 1 - lens[i]`, which never
    /// decreases; so the cut ones, those that start before `alo`, come first, each one longer than the last,
    /// and after them the lengths are the walk's own, longest at the stops. A cut suffix may occur earlier in
    /// `b` than the whole one: its first end is its state's.
    fn longest_block(&self, walk: &Walk, alo: u32, ahi: u32) -> (u32, u32, u32) {
        let lens = &walk.lens;
        // `cut_end`: the first `i` whose match starts at `alo` or later.
        let (mut cut_end, mut hi) = (alo, ahi);
        while cut_end < hi {
            let mid = cut_end + (hi - cut_end) / 2;
            if mid + 1 < alo + lens[mid as usize] {
                cut_end = mid + 1;
            } else {
                hi = mid;
            }
        }
        // The first longest: among the cut matches, the last; then the stops inside the range; then its end.
        let first = walk.stops.partition_point(|&i| i < cut_end);
        let stops = walk.stops[first..].iter().copied().take_while(|&i| i + 1 < ahi);
        let candidates = (cut_end > alo)
            .then(|| (cut_end - 1, cut_end - alo))
            .into_iter()
            .chain(stops.chain((cut_end < ahi).then_some(ahi - 1)).map(|i| (i, lens[i as usize])));
        let (mut end, mut bestsize) = (alo, 0);
        for (i, len) in candidates {
            if len > bestsize {
                (end, bestsize) = (i, len);
            }
        }
        if bestsize == 0 {
            return (alo, 0, 0);
        }
        let j = match lens[end as usize] == bestsize {
            true => walk.ends[end as usize],
            false => self.first_end[self.state_of(walk.ends[end as usize], bestsize) as usize],
        };
        (end + 1 - bestsize, j + 1 - bestsize, bestsize)
    }
}

/// CPython's `_calculate_ratio`: `2.0 * matches / length`, or `1.0` for two empty sequences.
fn calculate_ratio(matches: usize, length: usize) -> f64 {
    if length == 0 {
        1.0
    } else {
        2.0 * matches as f64 / length as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_examples() {
        // From the difflib documentation and docstrings.
        assert_eq!(ratio("abcd", "bcde"), 0.75);
        assert_eq!(ratio(" abcd", "abcd abcd"), 2.0 * 5.0 / 14.0);
        assert_eq!(ratio("", ""), 1.0);
        assert_eq!(ratio("abc", ""), 0.0);
    }

    #[test]
    fn autojunk_drops_popular_elements_of_b() {
        // b has 200 elements, so 'x' (occurring 199 > 3 times) is popular: it can no longer seed a match,
        // and the only seed left is 'y'; the block extends backwards over the x's that precede it in both.
        let b = format!("{}y", "x".repeat(199));
        let a = "xxy";
        assert_eq!(ratio(a, &b), 2.0 * 3.0 / 203.0);
        // Without a seed at all, a match at the start still extends forwards from (0, 0).
        assert_eq!(ratio("xxxq", &"x".repeat(200)), 2.0 * 3.0 / 204.0);
        assert_eq!(ratio("qxxx", &"x".repeat(200)), 0.0);
    }

    proptest::proptest! {
        /// The suffix automaton (over the whole of `b` and, when its block lies inside, over sub-ranges) finds
        /// exactly the blocks of CPython's loop
        /// (which the plain loop reproduces, checked against CPython itself in tests/advantage/difflib.rs),
        /// ties included: a small alphabet makes many equally long blocks.
        #[test]
        fn automaton_agrees_with_the_plain_loop(a in "[abc é]{0,60}", b in "[abcd é]{0,199}") {
            let with = Reference::new(&b);
            proptest::prop_assert!(with.automaton.is_some());
            let without = Reference { automaton: None, ..with.clone() };
            let a: Vec<char> = a.chars().collect();
            let mut m = Matcher::default();
            proptest::prop_assert_eq!(m.ratio(&a, &with).to_bits(), m.ratio(&a, &without).to_bits());
            // `ratio` sizes the scratch rows and walks the automaton.
            let (n, lb) = (a.len() as u32, b.chars().count() as u32);
            for (alo, ahi) in [(0, n), (n / 3, n), (0, n / 2), (n / 4, 3 * n / 4)] {
                for (blo, bhi) in [(0, lb), (lb / 3, lb), (0, lb / 2), (lb / 4, 3 * lb / 4)] {
                    m.ratio(&a, &with);
                    let got = m.find_longest_match(&a, &with, alo, ahi, blo, bhi);
                    m.ratio(&a, &without);
                    let want = m.find_longest_match(&a, &without, alo, ahi, blo, bhi);
                    proptest::prop_assert_eq!(got, want, "a[{}..{}] b[{}..{}]", alo, ahi, blo, bhi);
                }
            }
        }
    }

    #[test]
    fn similar_agrees_with_ratio() {
        let mut m = Matcher::default();
        let b = Reference::new("Search results for red shoes [SEP] Next > [SEP] B07 [SEP] Red Shoe");
        for a in ["Search results for red shoes [SEP] Next > [SEP] B08 [SEP] Red Shoe", "short", ""] {
            let candidate = Candidate::new(a);
            let r = m.ratio(candidate.chars(), &b);
            for theta in [0.1, 0.5, 0.9, r, r + 1e-12] {
                assert_eq!(m.similar(&candidate, &b, theta), r >= theta, "{a:?} θ={theta}");
            }
        }
    }
}
