//! The classic Porter (1980) stemmer, in the variant Lucene's `PorterStemFilter` runs (Martin
//! Porter's own reference implementation): it differs from the paper in step 2 (`-bli` → `-ble`
//! instead of `-abli` → `-able`, and the extra `-logi` → `-log`), and words of one or two letters
//! are left alone. It is not Porter2 ("English" Snowball), which tantivy ships and which stems
//! many words differently (e.g. `generously`, `dying`), hence this module.
//!
//! The word is held as UTF-16 code units, as Lucene's `char[]` (lengths and positions count units,
//! so a supplementary character is two); everything but `a e i o u` (and `y` after a consonant)
//! counts as a consonant, as in Lucene where non-ASCII letters are consonants too.

/// A reusable stemmer (keeps its buffer between words).
#[derive(Default, Clone)]
pub struct Stemmer {
    b: Vec<u16>,
    /// Index of the last letter of the word being stemmed (the word is `b[..=k]`).
    k: usize,
    /// Last index of the stem under test, set by a successful [`Stemmer::ends`]; -1 when the
    /// suffix is the whole word.
    j: isize,
}

impl Stemmer {
    /// Stems `word` (already lower-cased) and returns the stem.
    pub fn stem(&mut self, word: &str) -> String {
        self.b.clear();
        self.b.extend(word.encode_utf16());
        if self.b.len() > 2 {
            self.k = self.b.len() - 1;
            self.j = self.k as isize;
            self.step1ab();
            self.step1c();
            self.step2();
            self.step3();
            self.step4();
            self.step5();
            self.b.truncate(self.k + 1);
        }
        // Only ASCII suffixes are removed or replaced, so no surrogate pair is split.
        String::from_utf16_lossy(&self.b)
    }

    /// The unit at `i` as a character (U+FFFD for a surrogate, which no rule tests for).
    #[inline]
    fn ch(&self, i: usize) -> char {
        char::from_u32(u32::from(self.b[i])).unwrap_or('\u{FFFD}')
    }

    fn cons(&self, i: usize) -> bool {
        match self.ch(i) {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The stem under test, `0..=j`.
    fn stem_range(&self) -> std::ops::Range<usize> {
        0..(self.j + 1) as usize
    }

    /// The measure of `b[..=j]`: the number of vowel-sequence → consonant-sequence transitions.
    fn m(&self) -> usize {
        let mut n = 0;
        let mut prev_vowel = false;
        for i in self.stem_range() {
            let vowel = !self.cons(i);
            if prev_vowel && !vowel {
                n += 1;
            }
            prev_vowel = vowel;
        }
        n
    }

    fn vowel_in_stem(&self) -> bool {
        self.stem_range().any(|i| !self.cons(i))
    }

    fn double_c(&self, i: usize) -> bool {
        i >= 1 && self.b[i] == self.b[i - 1] && self.cons(i)
    }

    /// consonant-vowel-consonant ending at `i`, the last consonant not w, x or y.
    fn cvc(&self, i: usize) -> bool {
        i >= 2 && self.cons(i) && !self.cons(i - 1) && self.cons(i - 2) && !matches!(self.ch(i), 'w' | 'x' | 'y')
    }

    /// Whether `b[..=k]` ends with `s` (suffixes are ASCII); if so sets `j` to the index before it.
    fn ends(&mut self, s: &str) -> bool {
        let len = s.len();
        if len > self.k + 1 {
            return false;
        }
        let start = self.k + 1 - len;
        if !self.b[start..=self.k].iter().copied().eq(s.bytes().map(u16::from)) {
            return false;
        }
        self.j = start as isize - 1;
        true
    }

    /// Replaces `b[j+1..=k]` by `s`.
    fn set_to(&mut self, s: &str) {
        self.b.truncate((self.j + 1) as usize);
        self.b.extend(s.bytes().map(u16::from));
        self.k = self.b.len() - 1;
    }

    fn r(&mut self, s: &str) {
        if self.m() > 0 {
            self.set_to(s);
        }
    }

    /// Plurals and -ed / -ing.
    fn step1ab(&mut self) {
        if self.ch(self.k) == 's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.ch(self.k - 1) != 's' {
                self.k -= 1;
            }
        }
        if self.ends("eed") {
            if self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            // A vowel in the stem means the stem is not empty: j >= 0.
            self.k = self.j as usize;
            self.b.truncate(self.k + 1);
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_c(self.k) {
                if !matches!(self.ch(self.k), 'l' | 's' | 'z') {
                    self.k -= 1;
                }
            } else {
                // `j` is still the end of the stem (= k) here: the failed `ends` calls leave it.
                self.j = self.k as isize;
                if self.m() == 1 && self.cvc(self.k) {
                    self.b.truncate(self.k + 1);
                    self.b.push(u16::from(b'e'));
                    self.k += 1;
                }
            }
        }
    }

    /// Terminal y → i when there is another vowel in the stem.
    fn step1c(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            self.b[self.k] = u16::from(b'i');
        }
    }

    /// Double suffixes to single ones; the first suffix that matches decides, even when its
    /// stem's measure then forbids the replacement.
    fn step2(&mut self) {
        if self.k == 0 {
            return;
        }
        let rules: &[(&str, &str)] = match self.ch(self.k - 1) {
            'a' => &[("ational", "ate"), ("tional", "tion")],
            'c' => &[("enci", "ence"), ("anci", "ance")],
            'e' => &[("izer", "ize")],
            'l' => &[("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")],
            'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            's' => &[("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")],
            't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            'g' => &[("logi", "log")],
            _ => &[],
        };
        self.first_rule(rules);
    }

    /// -ic-, -full, -ness etc.
    fn step3(&mut self) {
        let rules: &[(&str, &str)] = match self.ch(self.k) {
            'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            'i' => &[("iciti", "ic")],
            'l' => &[("ical", "ic"), ("ful", "")],
            's' => &[("ness", "")],
            _ => &[],
        };
        self.first_rule(rules);
    }

    fn first_rule(&mut self, rules: &[(&str, &str)]) {
        for (suffix, replacement) in rules {
            if self.ends(suffix) {
                self.r(replacement);
                return;
            }
        }
    }

    /// Drops -ant, -ence etc. in context <c>vcvc<v>.
    fn step4(&mut self) {
        if self.k == 0 {
            return;
        }
        let suffixes: &[&str] = match self.ch(self.k - 1) {
            'a' => &["al"],
            'c' => &["ance", "ence"],
            'e' => &["er"],
            'i' => &["ic"],
            'l' => &["able", "ible"],
            'n' => &["ant", "ement", "ment", "ent"],
            'o' => &["ion", "ou"],
            's' => &["ism"],
            't' => &["ate", "iti"],
            'u' => &["ous"],
            'v' => &["ive"],
            'z' => &["ize"],
            _ => &[],
        };
        let mut matched = false;
        for suffix in suffixes {
            if self.ends(suffix) {
                // -ion only after s or t (and so never as the whole word).
                if *suffix == "ion" && (self.j < 0 || !matches!(self.ch(self.j as usize), 's' | 't')) {
                    continue;
                }
                matched = true;
                break;
            }
        }
        // m > 1 implies a non-empty stem.
        if matched && self.m() > 1 {
            self.k = self.j as usize;
        }
    }

    /// Final -e, and -ll → -l when m > 1.
    fn step5(&mut self) {
        self.j = self.k as isize;
        if self.ch(self.k) == 'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        // `j` still covers the removed `e`, as in the reference implementation.
        if self.ch(self.k) == 'l' && self.double_c(self.k) && self.m() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stemmer;

    #[test]
    fn classic_porter_examples() {
        // Examples from Porter's paper, and the reference implementation's departures from it.
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            // Departures of the reference implementation (and Lucene) from the paper.
            ("possibly", "possibl"),
            ("archaeology", "archaeolog"),
            // Short words are not stemmed; non-ASCII letters are consonants.
            ("is", "is"),
            ("as", "as"),
            ("women", "women"),
            ("shoes", "shoe"),
            ("running", "run"),
            ("generously", "gener"),
            ("dying", "dy"),
            ("café", "café"),
            // Lengths count UTF-16 units: `𝐚s` is three, so its `s` goes.
            ("𝐚s", "𝐚"),
            ("ís", "ís"),
            ("ies", "i"),
            ("sses", "ss"),
        ];
        let mut stemmer = Stemmer::default();
        for (word, want) in cases {
            assert_eq!(stemmer.stem(word), want, "stem({word})");
        }
    }
}
