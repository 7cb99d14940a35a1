//! Scoring one segment of the index for one query, three ways that give the same top [`TOP_K`]
//! bit for bit.
//!
//! A document's score is the sum of one `f32` [`contribution`] per query term it contains, added
//! in `f64` in query-term order (ascending term text) from 0 and rounded once to `f32`, as Lucene's
//! disjunction scorers add (`double score += scorer.score(); return (float) score;`). A few `f32`
//! values add exactly in `f64` unless their magnitudes are more than 2²⁹ apart, so the order
//! Lucene happens to visit the terms in does not change the bits. Every scorer here computes
//! exactly that sum for every document it offers, and the top [`TOP_K`] by (score, asin) is unique
//! whatever order documents are offered in, so the scorers agree exactly as long as no document
//! that belongs in the top [`TOP_K`] is left out. The pruning in [`document_at_a_time`] leaves out
//! only documents whose `f32` score is provably below the worst kept one.
//!
//! - [`exhaustive`]: the original scorer, kept as the oracle the tests compare with: every posting
//!   of every term into one accumulator per document of the segment, then every match offered.
//! - [`term_at_a_time`]: the same in windows of [`WINDOW`] documents whose accumulators stay in
//!   cache, with table lookups for the contributions; fastest when most postings must be read.
//! - [`document_at_a_time`]: block-max MaxScore over the postings; fastest when a few documents
//!   clearly lead, and hands over to [`term_at_a_time`] when its progress says that is cheaper.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{BlockSegmentPostings, Postings, SegmentPostings};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, InvertedIndexReader, Term, TERMINATED};

use super::params::TOP_K;

/// One query term's BM25 contribution to a document, as Lucene computes it in `f32`:
/// `weight · (1 − 1 / (1 + tf / (k1 · (1 − b + b · dl / avgdl))))`, with `inv` the per-norm
/// factor `1 / (k1 · (1 − b + b · dl / avgdl))`.
///
/// Non-decreasing in the rounded product `tf · inv` (each IEEE operation is monotone), which is
/// what makes `contribution_bound(weight, x)` a bound for every posting whose `tf · inv` is ≤ x.
#[inline]
pub(super) fn contribution(weight: f32, tf: u32, inv: f32) -> f32 {
    contribution_bound(weight, tf as f32 * inv)
}

#[inline]
fn contribution_bound(weight: f32, tf_inv: f32) -> f32 {
    weight - weight / (1.0 + tf_inv)
}

/// What the scorers need of one segment.
pub(super) struct Segment<'a> {
    pub inverted: &'a InvertedIndexReader,
    pub norms: &'a FieldNormReader,
    /// Per doc id: its fieldnorm id (a copy of `norms`, read without indirection).
    pub norm_ids: &'a [u8],
    pub doc_to_product: &'a [u32],
    /// Per product: the rank of its asin, for ties.
    pub asin_rank: &'a [u32],
    pub norm_inverse: &'a [f32; 256],
    pub bounds: &'a TermBounds,
    pub max_doc: DocId,
}

impl Segment<'_> {
    fn hit(&self, doc: DocId, score: f32) -> Hit {
        let product = self.doc_to_product[doc as usize];
        Hit { score, asin_rank: self.asin_rank[product as usize], product }
    }
}

/// When [`document_at_a_time`] hands the rest of the segment to [`term_at_a_time`].
#[derive(Clone, Copy, Debug)]
pub(super) enum Handover {
    /// When the cost model says so (see [`CHECKPOINT`]); a segment of one [`WINDOW`] or less is
    /// scored term at a time from the start.
    Auto,
    Never,
    /// At the first candidate document ≥ this doc id (for the tests).
    At(DocId),
}

/// The original scorer: every posting of every term, in query-term order, into one accumulator per
/// document of the segment; then every matching document is offered.
pub(super) fn exhaustive(seg: &Segment, terms: &[(Term, f32)], best: &mut TopK) -> tantivy::Result<()> {
    let mut scores = vec![0f64; seg.max_doc as usize];
    for (term, weight) in terms {
        let Some(mut postings) = seg.inverted.read_postings(term, IndexRecordOption::WithFreqs)? else { continue };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            let inv = seg.norm_inverse[seg.norms.fieldnorm_id(doc) as usize];
            scores[doc as usize] += f64::from(contribution(*weight, postings.term_freq(), inv));
            doc = postings.advance();
        }
    }
    // A match scores > 0 (idf > 0, tf ≥ 1) unless its contributions all round to 0; only
    // positive scores are offered. Documents are never deleted from these write-once indexes,
    // so every doc id is live.
    for (doc, &sum) in scores.iter().enumerate() {
        let score = sum as f32;
        if score > 0.0 {
            best.offer(seg.hit(doc as DocId, score));
        }
    }
    Ok(())
}

/// Terms with at least this many postings get a contribution table in [`term_at_a_time`].
const TABLE_MIN_DF: u32 = 8192;
/// Term frequencies 1..=TABLE_TF are looked up in that table.
const TABLE_TF: usize = 8;
/// Documents per window of [`term_at_a_time`] (128 KiB of `f64` accumulators).
const WINDOW: DocId = 16384;

/// Term at a time over documents `from..`, one window of [`WINDOW`] documents at a time so that
/// the window's accumulators stay in cache: within a window, every posting of every term, in
/// query-term order, is added into the document's `f64` accumulator (so each document's sum is in
/// query-term order); then the window's matches are offered, rounded to `f32`, and its
/// accumulators zeroed.
/// Contributions for small term frequencies come from a per-term table over (tf, fieldnorm id)
/// filled by [`contribution`] itself, so they are the same bits.
pub(super) fn term_at_a_time(
    seg: &Segment,
    terms: &[(Term, f32)],
    from: DocId,
    best: &mut TopK,
) -> tantivy::Result<()> {
    struct Run {
        postings: BlockSegmentPostings,
        /// Next posting of the loaded block.
        pos: usize,
        weight: f32,
        /// Offset of the term's table in `tables`, if it has one.
        table: Option<usize>,
    }
    if from >= seg.max_doc {
        return Ok(());
    }
    let mut runs = Vec::with_capacity(terms.len());
    let mut tables = Vec::new();
    for (term, weight) in terms {
        let Some(info) = seg.inverted.get_term_info(term)? else { continue };
        let mut postings = seg.inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
        let pos = if from > 0 { postings.seek(from) } else { 0 };
        let table = (info.doc_freq >= TABLE_MIN_DF).then(|| {
            let offset = tables.len();
            for tf in 1..=TABLE_TF as u32 {
                tables.extend(seg.norm_inverse.iter().map(|&inv| contribution(*weight, tf, inv)));
            }
            offset
        });
        runs.push(Run { postings, pos, weight: *weight, table });
    }
    if runs.is_empty() {
        return Ok(());
    }
    let mut scores = vec![0f64; WINDOW.min(seg.max_doc - from) as usize];
    // Only positive scores are offered (as by `exhaustive`): the smallest positive f32 is the bar
    // until TOP_K hits are kept, then the worst kept score (a tie may still get in by its asin).
    let mut theta = best.threshold_f32().max(f32::from_bits(1));
    let mut start = from;
    while start < seg.max_doc {
        let end = start.saturating_add(WINDOW).min(seg.max_doc);
        let window = &mut scores[..(end - start) as usize];
        for run in &mut runs {
            let table = run.table.map_or(&[][..], |offset| &tables[offset..offset + TABLE_TF * 256]);
            loop {
                let docs = run.postings.docs();
                let Some(&last) = docs.last() else { break };
                let n = if last < end { docs.len() } else { docs.partition_point(|&d| d < end) };
                let range = run.pos.min(n)..n;
                accumulate(window, start, &docs[range.clone()], &run.postings.freqs()[range], seg, table, run.weight);
                if n < docs.len() {
                    run.pos = n;
                    break;
                }
                run.postings.advance();
                run.pos = 0;
            }
        }
        // Chunks where no sum rounds to θ or more are only zeroed. A sum below `bar`, the midpoint
        // between θ and the f32 below it (exact in f64), rounds below θ; the test is a branch-free
        // comparison of every sum with `bar`, which vectorises.
        const CHUNK: usize = 16;
        let mut bar = rounding_bar(theta);
        for (c, chunk) in window.chunks_mut(CHUNK).enumerate() {
            if chunk.iter().fold(false, |any, &x| any | (x >= bar)) {
                for (i, &sum) in chunk.iter().enumerate() {
                    let score = sum as f32;
                    if score >= theta && best.offer(seg.hit(start + (c * CHUNK + i) as DocId, score)) {
                        theta = best.threshold_f32().max(f32::from_bits(1));
                        bar = rounding_bar(theta);
                    }
                }
            }
            chunk.fill(0.0);
        }
        start = end;
    }
    Ok(())
}

/// The least `f64` that can round to the positive `f32` `theta`: the midpoint between `theta` and
/// the `f32` below it (a tie rounds to even, so the midpoint itself may or may not get there).
#[inline]
fn rounding_bar(theta: f32) -> f64 {
    (f64::from(f32::from_bits(theta.to_bits() - 1)) + f64::from(theta)) / 2.0
}

/// Adds one term's contributions for `docs` (all in `start..start + acc.len()`) into `acc`.
/// `table[(tf − 1) · 256 + id]`, where present, is `contribution(weight, tf, norm_inverse[id])`.
#[inline]
fn accumulate(acc: &mut [f64], start: DocId, docs: &[DocId], freqs: &[u32], seg: &Segment, table: &[f32], weight: f32) {
    for (&doc, &tf) in docs.iter().zip(freqs) {
        let id = seg.norm_ids[doc as usize] as usize;
        let x = match table.get((tf as usize).wrapping_sub(1).wrapping_mul(256).wrapping_add(id)) {
            Some(&x) if tf >= 1 => x,
            _ => contribution(weight, tf, seg.norm_inverse[id]),
        };
        acc[(doc - start) as usize] += f64::from(x);
    }
}

/// Documents between two checks, in [`document_at_a_time`], of whether to go on or to hand the
/// rest of the segment to [`term_at_a_time`]. The check compares the work of the last stretch
/// (candidates plus seeks, each about [`DAAT_COST`] postings' worth of term-at-a-time work),
/// extrapolated to the rest of the segment, with reading every remaining posting.
const CHECKPOINT: DocId = 32768;
const DAAT_COST: f64 = 8.0;
/// Cost of one document of a term-at-a-time window scan, in postings.
const SCAN_COST: f64 = 0.3;

/// Block-max MaxScore, document at a time (Turtle & Flood 1995; Ding & Suel 2011).
///
/// Every bound is `contribution_bound(weight, x)` for an `x` at least the largest rounded
/// `tf · inv` it covers (a whole posting list, or one block of [`BLOCK`] postings), so it holds
/// for the computed `f32` contributions. With terms sorted by list bound ascending, once the worst
/// kept hit scores θ the longest prefix of terms whose bounds sum below θ is "non-essential": a
/// document containing only those cannot get in, so candidates are drawn only from the essential
/// terms' postings. For a candidate, the current blocks of all terms bound every document up to
/// the nearest block end, and when that sum is below θ the whole stretch is skipped. Otherwise the
/// essential terms are scored and the non-essential ones looked up (skip-list seeks) while the
/// block bounds say the document can still reach θ.
///
/// Bounds are summed in `f64` and widened by more than the worst relative rounding error of the
/// score (an `f64` sum of that many non-negative terms, then one rounding to `f32`), so a document
/// is dropped only when its `f32` score is strictly below θ (a score equal to θ may still get in
/// by a smaller asin). A surviving candidate's score is summed as every scorer sums it: each
/// term's contribution, in query-term order, in `f64`, rounded once.
pub(super) fn document_at_a_time(
    seg: &Segment,
    terms: &[(Term, f32)],
    handover: Handover,
    best: &mut TopK,
) -> tantivy::Result<()> {
    if matches!(handover, Handover::Auto) && seg.max_doc <= WINDOW {
        // One window: nothing to gain from skipping (the demo catalog has 1,000 products).
        return term_at_a_time(seg, terms, 0, best);
    }
    let mut cursors = Vec::with_capacity(terms.len());
    for (slot, (term, weight)) in terms.iter().enumerate() {
        let Some(ord) = seg.inverted.terms().term_ord(term.serialized_value_bytes())? else { continue };
        let Some(info) = seg.inverted.get_term_info(term)? else { continue };
        let postings = seg.inverted.read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
        cursors.push(Cursor::new(slot, *weight, seg.bounds.blocks(ord), postings));
    }
    if cursors.is_empty() {
        return Ok(());
    }
    cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound).then(a.slot.cmp(&b.slot)));
    // A score (the f64 sum of n non-negative f32 values, rounded once to f32) exceeds the real sum
    // by a factor of at most (1 + 2⁻⁵³)ⁿ⁻¹ · (1 + 2⁻²⁴), and the f64 sums of bounds here are off by
    // as little; 2⁻²³ per term, plus one, covers both with room to spare (and would still cover an
    // f32 sum, (1 + 2⁻²⁴)ⁿ⁻¹).
    let widen = 1.0 + (cursors.len() as f64 + 1.0) * f64::from(f32::EPSILON);
    let can_reach = |bound: f64, theta: f64| bound * widen >= theta;
    // `prefix[j]`: bound on the score of a document that contains only terms `cursors[..j]`.
    let mut prefix = Vec::with_capacity(cursors.len() + 1);
    prefix.push(0.0f64);
    for c in &cursors {
        prefix.push(prefix[prefix.len() - 1] + c.bound);
    }
    let mut theta = best.threshold();
    // The non-essential terms are cursors[..essential_from].
    let mut essential_from = 0;
    while essential_from < cursors.len() && !can_reach(prefix[essential_from + 1], theta) {
        essential_from += 1;
    }
    let mut contributions = vec![0f32; terms.len()];
    let mut block_prefix = Vec::with_capacity(cursors.len() + 1);
    let all_postings: u64 = cursors.iter().map(|c| u64::from(c.postings.doc_freq())).sum();
    // Candidates plus seeks since the last checkpoint.
    let (mut work, mut checkpoint) = (0u64, 0 as DocId);
    loop {
        let doc = cursors[essential_from..].iter().map(|c| c.postings.doc()).min().unwrap_or(TERMINATED);
        if doc == TERMINATED {
            return Ok(());
        }
        // Every document below `doc` is settled here: offered, or shown unable to get in.
        let hand_over = match handover {
            Handover::Never => false,
            Handover::At(at) => doc >= at,
            Handover::Auto if doc >= checkpoint.saturating_add(CHECKPOINT) => {
                let rest = f64::from(seg.max_doc - doc);
                let daat = work as f64 * rest / f64::from(doc - checkpoint) * DAAT_COST;
                let taat = all_postings as f64 * rest / f64::from(seg.max_doc) + rest * SCAN_COST;
                (work, checkpoint) = (0, doc);
                daat > taat
            }
            Handover::Auto => false,
        };
        if hand_over {
            return term_at_a_time(seg, terms, doc, best);
        }
        work += 1;
        // Every posting in doc..=end of each term lies in that term's current block.
        let mut end = TERMINATED;
        let mut block_sum = 0f64;
        for c in &mut cursors {
            c.shallow_seek(doc);
            end = end.min(c.block_end);
            block_sum += c.block_bound;
        }
        if !can_reach(block_sum, theta) {
            // `end` is at most the end of the block holding an essential term's posting `doc`,
            // so it is below TERMINATED.
            let next = end + 1;
            for c in &mut cursors[essential_from..] {
                if c.postings.doc() < next {
                    c.postings.seek(next);
                }
            }
            continue;
        }
        let inv = seg.norm_inverse[seg.norm_ids[doc as usize] as usize];
        contributions.fill(0.0);
        let mut partial = 0f64;
        for c in &mut cursors[essential_from..] {
            if c.postings.doc() == doc {
                let x = contribution(c.weight, c.postings.term_freq(), inv);
                contributions[c.slot] = x;
                partial += f64::from(x);
                c.postings.advance();
            }
        }
        block_prefix.clear();
        block_prefix.push(0.0f64);
        for c in &cursors[..essential_from] {
            block_prefix.push(block_prefix[block_prefix.len() - 1] + c.block_bound);
        }
        // The non-essential terms, largest bound first, while the document can still get in.
        let mut alive = true;
        for j in (0..essential_from).rev() {
            if !can_reach(partial + block_prefix[j + 1], theta) {
                alive = false;
                break;
            }
            let c = &mut cursors[j];
            if c.postings.doc() < doc {
                work += 1;
                c.postings.seek(doc);
            }
            if c.postings.doc() == doc {
                let x = contribution(c.weight, c.postings.term_freq(), inv);
                contributions[c.slot] = x;
                partial += f64::from(x);
            }
        }
        if !alive || !can_reach(partial, theta) {
            continue;
        }
        let score = contributions.iter().fold(0f64, |sum, &x| sum + f64::from(x)) as f32;
        // Like the exhaustive scorer, offer only positive scores (a contribution can round to 0
        // for a vanishingly small tf · inv).
        if score > 0.0 && best.offer(seg.hit(doc, score)) {
            theta = best.threshold();
            while essential_from < cursors.len() && !can_reach(prefix[essential_from + 1], theta) {
                essential_from += 1;
            }
        }
    }
}

/// Postings per bound block: tantivy's own block size, so that a skipped block is one tantivy
/// does not decode.
const BLOCK: usize = 128;

/// Upper bounds on `tf · inv` (rounded to `f32` as [`contribution`] rounds it) for every term of a
/// segment: per block of [`BLOCK`] postings (its last doc id and its largest value) and per term.
pub(super) struct TermBounds {
    /// Per term ordinal: its blocks are `block_start[ord]..block_start[ord + 1]`.
    block_start: Vec<u32>,
    block_last_doc: Vec<DocId>,
    block_max: Vec<f32>,
    term_max: Vec<f32>,
}

/// One term's bounds in a segment.
#[derive(Clone, Copy)]
struct TermBlocks<'a> {
    last_doc: &'a [DocId],
    max: &'a [f32],
    term_max: f32,
}

impl TermBounds {
    /// One pass over every posting of the field, when the index is opened.
    pub(super) fn compute(
        inverted: &InvertedIndexReader,
        norm_ids: &[u8],
        norm_inverse: &[f32; 256],
    ) -> tantivy::Result<TermBounds> {
        let inv: Vec<f32> = norm_ids.iter().map(|&id| norm_inverse[id as usize]).collect();
        let terms = inverted.terms();
        let mut out = TermBounds {
            block_start: Vec::with_capacity(terms.num_terms() + 1),
            block_last_doc: Vec::new(),
            block_max: Vec::new(),
            term_max: Vec::with_capacity(terms.num_terms()),
        };
        let mut stream = terms.stream()?;
        while stream.advance() {
            // Ordinals are dense and streamed in order.
            if stream.term_ord() as usize != out.term_max.len() {
                return Err(tantivy::TantivyError::InternalError("term ordinals streamed out of order".to_owned()));
            }
            out.block_start.push(out.block_max.len() as u32);
            let mut postings =
                inverted.read_block_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqs)?;
            let mut term_max = 0f32;
            let (mut block_max, mut in_block, mut last_doc) = (0f32, 0usize, 0);
            while !postings.docs().is_empty() {
                for (&doc, &tf) in postings.docs().iter().zip(postings.freqs()) {
                    // A doc id past the norms cannot be scored either; no bound is then safe.
                    let x = inv.get(doc as usize).map_or(f32::INFINITY, |&inv| tf as f32 * inv);
                    block_max = block_max.max(x);
                    (in_block, last_doc) = (in_block + 1, doc);
                    if in_block == BLOCK {
                        out.block_last_doc.push(doc);
                        out.block_max.push(block_max);
                        term_max = term_max.max(block_max);
                        (block_max, in_block) = (0.0, 0);
                    }
                }
                postings.advance();
            }
            if in_block > 0 {
                out.block_last_doc.push(last_doc);
                out.block_max.push(block_max);
                term_max = term_max.max(block_max);
            }
            out.term_max.push(term_max);
        }
        out.block_start.push(out.block_max.len() as u32);
        Ok(out)
    }

    fn blocks(&self, ord: u64) -> TermBlocks<'_> {
        let ord = ord as usize;
        match (self.block_start.get(ord), self.block_start.get(ord + 1), self.term_max.get(ord)) {
            (Some(&a), Some(&b), Some(&term_max)) => TermBlocks {
                last_doc: &self.block_last_doc[a as usize..b as usize],
                max: &self.block_max[a as usize..b as usize],
                term_max,
            },
            // An ordinal the bounds do not know: no block bounds, and a list bound nothing exceeds.
            _ => TermBlocks { last_doc: &[], max: &[], term_max: f32::INFINITY },
        }
    }
}

/// One query term's postings in a segment, for [`document_at_a_time`].
struct Cursor<'a> {
    /// Position of the term in the query's term list (the summation order).
    slot: usize,
    weight: f32,
    /// Upper bound on the term's contribution to any document of the segment.
    bound: f64,
    postings: SegmentPostings,
    blocks: TermBlocks<'a>,
    /// Current block: the first whose last doc is ≥ the last doc asked about.
    block: usize,
    /// Its last doc (every posting from the doc asked about up to here is in the block), or
    /// TERMINATED when past the last block.
    block_end: DocId,
    /// Upper bound on the term's contribution to any document up to `block_end`.
    block_bound: f64,
}

impl<'a> Cursor<'a> {
    fn new(slot: usize, weight: f32, blocks: TermBlocks<'a>, postings: SegmentPostings) -> Cursor<'a> {
        let bound = f64::from(contribution_bound(weight, blocks.term_max));
        let mut cursor = Cursor { slot, weight, bound, postings, blocks, block: 0, block_end: 0, block_bound: 0.0 };
        cursor.enter_block();
        cursor
    }

    fn enter_block(&mut self) {
        match (self.blocks.last_doc.get(self.block), self.blocks.max.get(self.block)) {
            (Some(&last), Some(&x)) => {
                self.block_end = last;
                self.block_bound = f64::from(contribution_bound(self.weight, x));
            }
            // No block bounds at all: the list bound holds everywhere.
            _ if self.blocks.last_doc.is_empty() => {
                self.block_end = TERMINATED;
                self.block_bound = self.bound;
            }
            // Past the last block: no postings left.
            _ => {
                self.block_end = TERMINATED;
                self.block_bound = 0.0;
            }
        }
    }

    /// Moves the block pointer (not the postings) to the block that would hold `doc`. Called with
    /// non-decreasing `doc`.
    #[inline]
    fn shallow_seek(&mut self, doc: DocId) {
        if self.block_end >= doc {
            return;
        }
        while self.blocks.last_doc.get(self.block).is_some_and(|&last| last < doc) {
            self.block += 1;
        }
        self.enter_block();
    }
}

/// A scored product; `Ord` puts better hits first-greater: higher score, then smaller asin.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hit {
    pub score: f32,
    pub asin_rank: u32,
    pub product: u32,
}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score.total_cmp(&other.score).then(other.asin_rank.cmp(&self.asin_rank))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Hit {}

/// The best [`TOP_K`] hits seen so far: a min-heap whose top is the worst kept hit.
#[derive(Default)]
pub(super) struct TopK {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Hit>>,
}

impl TopK {
    /// Keeps `hit` if it is among the best [`TOP_K`] so far; says whether it was kept.
    pub(super) fn offer(&mut self, hit: Hit) -> bool {
        if self.heap.len() < TOP_K {
            self.heap.push(std::cmp::Reverse(hit));
            true
        } else if self.heap.peek().is_some_and(|worst| hit > worst.0) {
            self.heap.pop();
            self.heap.push(std::cmp::Reverse(hit));
            true
        } else {
            false
        }
    }

    /// The score a hit needs to get in (equal only with a smaller asin): the worst kept score once
    /// [`TOP_K`] hits are kept, minus infinity before.
    fn threshold_f32(&self) -> f32 {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= TOP_K => worst.0.score,
            _ => f32::NEG_INFINITY,
        }
    }

    fn threshold(&self) -> f64 {
        f64::from(self.threshold_f32())
    }

    /// Best first.
    pub(super) fn into_sorted(self) -> Vec<(usize, f32)> {
        // `into_sorted_vec` of `Reverse` items is ascending in `Reverse`, i.e. best hit first.
        self.heap.into_sorted_vec().into_iter().map(|r| (r.0.product as usize, r.0.score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_score_then_asin_rank() {
        let mut best = TopK::default();
        for (score, asin_rank, product) in [(1.0, 5, 0), (2.0, 9, 1), (1.0, 2, 2), (0.5, 0, 3)] {
            best.offer(Hit { score, asin_rank, product });
        }
        assert_eq!(best.into_sorted(), vec![(1, 2.0), (2, 1.0), (0, 1.0), (3, 0.5)]);

        // Past TOP_K, only better hits get in; an equal score with a smaller asin is better.
        let mut best = TopK::default();
        for i in 0..TOP_K as u32 {
            assert!(best.offer(Hit { score: 1.0, asin_rank: 100 + i, product: i }));
        }
        assert_eq!(best.threshold(), 1.0);
        assert!(!best.offer(Hit { score: 1.0, asin_rank: 500, product: 999 }));
        assert!(best.offer(Hit { score: 1.0, asin_rank: 7, product: 1000 }));
        let kept = best.into_sorted();
        assert_eq!(kept.len(), TOP_K);
        assert_eq!(kept[0].0, 1000);
        assert!(kept.iter().all(|&(p, _)| p != 999 && p != TOP_K - 1));
    }

    #[test]
    fn sums_below_the_bar_round_below_theta() {
        for theta in [f32::from_bits(1), 1e-30, 0.5, 1.0, 3.7, 17.25, 1e30] {
            let bar = rounding_bar(theta);
            let below = f64::from_bits(bar.to_bits() - 1);
            assert!((below as f32) < theta, "{theta}");
            let above = f64::from_bits(bar.to_bits() + 1);
            assert!((above as f32) >= theta, "{theta}");
            assert!(f64::from(theta) >= bar);
        }
    }

    #[test]
    fn contributions_are_monotone_in_the_rounded_tf_inv() {
        // What makes `contribution_bound(weight, largest tf·inv)` a bound: sorted by the rounded
        // product tf·inv, the contributions never decrease.
        let inv: Vec<f32> = (0..=255u8)
            .map(|id| {
                1.0 / (0.9 * (0.6 + 0.4 * tantivy::fieldnorm::FieldNormReader::id_to_fieldnorm(id) as f32 / 37.3))
            })
            .collect();
        for weight in [0.013f32, 0.5, 1.0, 2.7182817, 9.3, 31.0] {
            let mut points: Vec<(f32, f32)> = (1..40u32)
                .flat_map(|tf| inv.iter().map(move |&i| (tf as f32 * i, contribution(weight, tf, i))))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            for pair in points.windows(2) {
                assert!(pair[0].1 <= pair[1].1, "{pair:?}");
            }
            assert!(points.iter().all(|&(x, c)| c >= 0.0 && c <= contribution_bound(weight, x)));
        }
    }
}
