//! Lucene's `StandardTokenizer` as pyserini 0.17 runs it (Lucene 8.11): the JFlex grammar of
//! `StandardTokenizerImpl` (UAX #29 word breaks of Unicode 9.0, with its emoji sequences after
//! Emoji 11.0), written here as regular expressions over character classes
//! ([`super::unicode_tables`]) and compiled into a DFA once per process.
//!
//! The scanner works like JFlex's: from the current position it takes the longest text any rule
//! matches; where no rule matches, it skips one code point (the grammar's `[^]` rule, which makes
//! no token). The rules (UAX #29 WB4 lets Format, Extend and ZWJ characters follow any character of
//! a rule, written `X*` below):
//!
//! - emoji: an emoji character or presentation/modifier sequence, optionally joined by ZWJ to more
//!   of them or followed by a tag sequence; a keycap sequence (`[0-9#*]` U+FE0F? U+20E3); a pair of
//!   regional indicators (a flag);
//! - words: runs of letters (ALetter, Hebrew_Letter), digits and katakana, joined through
//!   ExtendNumLet (`_`), letters through MidLetter/MidNumLet/Single_Quote (`'`, `.`, `:`) between
//!   two letters, digits through MidNum/MidNumLet/Single_Quote (`,`, `.`, `;`) between two digits,
//!   Hebrew letters through `'` after one and `"` between two; letters and digits join directly
//!   (WB9, WB10). The numbers, Hangul and katakana rules of the grammar match subsets of this one
//!   and only type the token, so they are left out: the types are never used;
//! - runs of Line_Break Complex_Context characters (Thai, Lao, Khmer, Myanmar, ...);
//! - one Han character, one Hiragana character, each with its `X*`.
//!
//! Lucene's scanner buffer is the maximum token length, 255 UTF-16 code units, and cannot grow: a
//! match can only look that far ahead of its start, so longer words are cut into pieces of at most
//! 255 units (a surrogate pair is never split) and each piece is scanned from where the last ended.

use std::sync::OnceLock;

use super::unicode_tables::{flags::*, CLASS_FLAGS, RANGES};

/// Lucene's `StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH`, in UTF-16 code units.
pub const MAX_TOKEN_LENGTH: usize = 255;

const NUM_CLASSES: usize = CLASS_FLAGS.len();

/// Calls `f(start, end)` with the byte range of every token of `text`, in order.
pub fn for_each_token(text: &str, mut f: impl FnMut(usize, usize)) {
    let dfa = Dfa::get();
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        // Fast path: runs of ASCII characters that make no token (spaces, most punctuation).
        let b = bytes[pos];
        if b < 0x80 && dfa.ascii_start[b as usize] == DEAD {
            pos += 1;
            continue;
        }
        let end = dfa.longest_match(text, pos);
        if end > pos {
            f(pos, end);
            pos = end;
        } else {
            // No rule matches: `[^]` skips one code point.
            pos += utf8_len(b);
        }
    }
}

/// The tokens of `text`, in order.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for_each_token(text, |a, b| out.push(&text[a..b]));
    out
}

#[inline]
fn utf8_len(first: u8) -> usize {
    match first {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// The class of a code point.
#[inline]
fn class_of(cp: u32) -> usize {
    let i = RANGES.partition_point(|&(start, _)| start <= cp);
    // RANGES starts at 0, so i ≥ 1.
    RANGES[i - 1].1 as usize
}

const DEAD: u16 = 0;
const START: u16 = 1;

/// The grammar as a DFA over character classes: state 0 is dead, state 1 the start.
struct Dfa {
    /// `next[state * NUM_CLASSES + class]`.
    next: Vec<u16>,
    accepting: Vec<bool>,
    ascii_class: [u8; 128],
    /// The state after each ASCII character from the start.
    ascii_start: [u16; 128],
}

impl Dfa {
    fn get() -> &'static Dfa {
        static DFA: OnceLock<Dfa> = OnceLock::new();
        DFA.get_or_init(|| Nfa::grammar().determinize())
    }

    /// End (byte offset) of the longest match starting at `start`, within Lucene's window of
    /// [`MAX_TOKEN_LENGTH`] UTF-16 units; `start` when nothing matches.
    #[inline]
    fn longest_match(&self, text: &str, start: usize) -> usize {
        let mut state = START;
        let mut units = 0;
        let mut last = start;
        let mut pos = start;
        for c in text[start..].chars() {
            let cp = c as u32;
            let (class, width) = if cp < 0x80 {
                (self.ascii_class[cp as usize] as usize, 1)
            } else {
                (class_of(cp), if cp < 0x10000 { 1 } else { 2 })
            };
            units += width;
            if units > MAX_TOKEN_LENGTH {
                break;
            }
            state = self.next[state as usize * NUM_CLASSES + class];
            if state == DEAD {
                break;
            }
            pos += c.len_utf8();
            if self.accepting[state as usize] {
                last = pos;
            }
        }
        last
    }
}

/// A character set of the grammar: a test on a class's flags.
type CharSet = fn(u32) -> bool;

/// A regular expression over [`CharSet`]s.
enum Re {
    Set(CharSet),
    Cat(Vec<Re>),
    Alt(Vec<Re>),
    Star(Box<Re>),
}

fn set(s: CharSet) -> Re {
    Re::Set(s)
}
fn cat(v: Vec<Re>) -> Re {
    Re::Cat(v)
}
fn alt(v: Vec<Re>) -> Re {
    Re::Alt(v)
}
fn star(r: Re) -> Re {
    Re::Star(Box::new(r))
}
fn opt(r: Re) -> Re {
    alt(vec![r, cat(vec![])])
}
/// `r+`, built from a closure because [`Re`] is not `Clone`.
fn plus(r: impl Fn() -> Re) -> Re {
    cat(vec![r(), star(r())])
}

/// `X (Format | Extend | ZWJ)*`.
fn ex(s: CharSet) -> Re {
    cat(vec![set(s), star(set(|f| f & EXT != 0))])
}
/// `X (Format | Extend | ZWJ, but not U+FE0E or U+FE0F)*`.
fn ex_sans_pres(s: CharSet) -> Re {
    cat(vec![set(s), star(set(|f| f & EXT != 0 && f & PRES == 0))])
}

fn is_emoji_char(f: u32) -> bool {
    // Extended_Pictographic, or Emoji other than regional indicators, keycap bases, the
    // "accidental" emoji and modifiers.
    f & EXT_PICT != 0 || (f & EMOJI != 0 && f & (RI | KEYCAP_BASE | ACCIDENTAL | EMOJI_MODIFIER) == 0)
}

/// `EmojiCharOrPresSeqOrModSeq`.
fn emoji_element() -> Re {
    let zwjs = || star(set(|f| f & ZWJ != 0));
    alt(vec![
        cat(vec![zwjs(), ex_sans_pres(is_emoji_char), opt(set(|f| f & FE0F != 0))]),
        cat(vec![
            opt(cat(vec![zwjs(), ex_sans_pres(|f| f & EMOJI_MODIFIER_BASE != 0)])),
            ex_sans_pres(|f| f & EMOJI_MODIFIER != 0),
        ]),
    ])
}

fn emoji_rule() -> Re {
    alt(vec![
        cat(vec![
            emoji_element(),
            alt(vec![
                star(cat(vec![set(|f| f & ZWJ != 0), emoji_element()])),
                cat(vec![plus(|| set(|f| f & TAG_SPEC != 0)), set(|f| f & TAG_TERM != 0)]),
            ]),
        ]),
        cat(vec![
            ex_sans_pres(|f| f & KEYCAP_BASE != 0),
            opt(set(|f| f & FE0F != 0)),
            ex_sans_pres(|f| f & KEYCAP != 0),
        ]),
        cat(vec![ex(|f| f & RI != 0), ex(|f| f & RI != 0)]),
    ])
}

fn enl() -> Re {
    ex(|f| f & EXTEND_NUM_LET != 0)
}
fn katakana() -> Re {
    ex(|f| f & KATAKANA != 0)
}
fn numeric() -> Re {
    ex(|f| f & NUMERIC != 0)
}
fn ahletter() -> Re {
    ex(|f| f & AHLETTER != 0)
}
fn hebrew() -> Re {
    ex(|f| f & HEBREW != 0)
}

/// One stretch of a word between ExtendNumLet runs.
fn word_body() -> Re {
    alt(vec![
        cat(vec![katakana(), star(cat(vec![star(enl()), katakana()]))]),
        plus(|| {
            alt(vec![
                cat(vec![
                    hebrew(),
                    alt(vec![ex(|f| f & SINGLE_QUOTE != 0), cat(vec![ex(|f| f & DOUBLE_QUOTE != 0), hebrew()])]),
                ]),
                cat(vec![numeric(), star(cat(vec![alt(vec![star(enl()), ex(|f| f & MID_NUM != 0)]), numeric()]))]),
                cat(vec![ahletter(), star(cat(vec![alt(vec![star(enl()), ex(|f| f & MID_LETTER != 0)]), ahletter()]))]),
            ])
        }),
    ])
}

fn word_rule() -> Re {
    cat(vec![star(enl()), word_body(), star(cat(vec![plus(enl), word_body()])), star(enl())])
}

/// Thompson NFA: each state either reads one character of a set, or has ε-moves.
struct Nfa {
    states: Vec<NfaState>,
    start: usize,
    accept: usize,
}

enum NfaState {
    Read(CharSet, usize),
    Eps(Vec<usize>),
}

impl Nfa {
    fn grammar() -> Nfa {
        let re = alt(vec![
            emoji_rule(),
            word_rule(),
            plus(|| ex(|f| f & COMPLEX_CONTEXT != 0)),
            ex(|f| f & HAN != 0),
            ex(|f| f & HIRAGANA != 0),
        ]);
        let mut nfa = Nfa { states: Vec::new(), start: 0, accept: 0 };
        let accept = nfa.add(NfaState::Eps(Vec::new()));
        nfa.accept = accept;
        nfa.start = nfa.build(&re, accept);
        nfa
    }

    fn add(&mut self, s: NfaState) -> usize {
        self.states.push(s);
        self.states.len() - 1
    }

    /// Adds states matching `re` then going on to `next`; returns the entry state.
    fn build(&mut self, re: &Re, next: usize) -> usize {
        match re {
            Re::Set(s) => self.add(NfaState::Read(*s, next)),
            Re::Cat(v) => v.iter().rev().fold(next, |n, r| self.build(r, n)),
            Re::Alt(v) => {
                let entries = v.iter().map(|r| self.build(r, next)).collect();
                self.add(NfaState::Eps(entries))
            }
            Re::Star(r) => {
                let hub = self.add(NfaState::Eps(vec![next]));
                let body = self.build(r, hub);
                if let NfaState::Eps(e) = &mut self.states[hub] {
                    e.push(body);
                }
                hub
            }
        }
    }

    /// Adds `s` and every state reachable from it by ε-moves to `set`.
    fn close(&self, s: usize, set: &mut Vec<bool>) {
        if set[s] {
            return;
        }
        set[s] = true;
        if let NfaState::Eps(e) = &self.states[s] {
            for &t in e {
                self.close(t, set);
            }
        }
    }

    /// Subset construction over the character classes.
    fn determinize(&self) -> Dfa {
        use std::collections::HashMap;
        let n = self.states.len();
        let mut start = vec![false; n];
        self.close(self.start, &mut start);
        let mut ids: HashMap<Vec<bool>, u16> = HashMap::new();
        let mut sets = vec![vec![false; n], start.clone()];
        ids.insert(sets[0].clone(), DEAD);
        ids.insert(start, START);
        let mut next = Vec::new();
        let mut accepting = Vec::new();
        let mut i = 0;
        while i < sets.len() {
            accepting.push(sets[i][self.accept]);
            for &flags in &CLASS_FLAGS {
                let mut to = vec![false; n];
                for (s, state) in self.states.iter().enumerate() {
                    if let (true, NfaState::Read(set, t)) = (sets[i][s], state) {
                        if set(flags) {
                            self.close(*t, &mut to);
                        }
                    }
                }
                let id = *ids.entry(to.clone()).or_insert_with(|| {
                    sets.push(to);
                    (sets.len() - 1) as u16
                });
                next.push(id);
            }
            i += 1;
        }
        let mut ascii_class = [0u8; 128];
        let mut ascii_start = [DEAD; 128];
        for cp in 0..128u32 {
            let class = class_of(cp);
            ascii_class[cp as usize] = class as u8;
            ascii_start[cp as usize] = next[START as usize * NUM_CLASSES + class];
        }
        Dfa { next, accepting, ascii_class, ascii_start }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_numbers_and_punctuation() {
        assert_eq!(
            tokens("The Women's Running-Shoes, size 7.5 and Wi-Fi; 1,299 dollars 3.5mm e.g. u.s.a. foo_bar"),
            [
                "The", "Women's", "Running", "Shoes", "size", "7.5", "and", "Wi", "Fi", "1,299", "dollars", "3.5mm",
                "e.g", "u.s.a", "foo_bar"
            ]
        );
        // Mid-word punctuation only joins between two letters (or two digits).
        assert_eq!(
            tokens("rock'n'roll don't 'quoted' 1..2 1.a a.1 10:30 a1b2"),
            ["rock'n'roll", "don't", "quoted", "1", "2", "1", "a", "a", "1", "10", "30", "a1b2"]
        );
    }

    #[test]
    fn emoji_are_tokens() {
        assert_eq!(tokens("love😀it 👍🏽 👨‍👩‍👧 🇺🇸🇬🇧 #️⃣ ¼ (ﾟ∀ﾟ)"), ["love", "😀", "it", "👍🏽", "👨‍👩‍👧", "🇺🇸", "🇬🇧", "#️⃣"]);
        assert_eq!(tokens("© 2020 ™"), ["©", "2020", "™"]);
    }

    #[test]
    fn cjk_kana_and_southeast_asian() {
        assert_eq!(
            tokens("中文字 ひらがな カタカナ한국어 ภาษาไทย"),
            ["中", "文", "字", "ひ", "ら", "が", "な", "カタカナ", "한국어", "ภาษาไทย"]
        );
    }

    #[test]
    fn long_words_are_cut_at_255_units() {
        let word = "a".repeat(600);
        let got = tokens(&word);
        assert_eq!(got.iter().map(|t| t.len()).collect::<Vec<_>>(), [255, 255, 90]);
        // A surrogate pair is never split: 127 letters of 2 units fit, the 128th does not.
        let wide = "𝐚".repeat(130);
        let got = tokens(&wide);
        assert_eq!(got.iter().map(|t| t.chars().count()).collect::<Vec<_>>(), [127, 3]);
    }
}
