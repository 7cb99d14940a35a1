// Writes src/webshop/product_search/unicode_tables.rs: the character classes of Lucene 8's StandardTokenizer
// (JFlex `%unicode 9.0`, with the Unicode Emoji 11.0 properties its grammar includes).
//
// Data: the npm packages @unicode/unicode-9.0.0 and @unicode/unicode-11.0.0 (Unicode's own data files as
// code point arrays, MIT). To regenerate:
//
//   d=$(mktemp -d) && (cd "$d" && npm init -y >/dev/null && npm install @unicode/unicode-9.0.0@2.0.7 @unicode/unicode-11.0.0@2.0.7)
//   node tests/oracles/unicode/generate.mjs "$d/node_modules" > src/webshop/product_search/unicode_tables.rs
//   rustfmt --edition 2021 --config max_width=120,use_small_heuristics=Max src/webshop/product_search/unicode_tables.rs
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node generate.mjs NODE_MODULES_DIR");
  process.exit(2);
}
async function codePoints(pkg, prop) {
  const file = path.join(modules, "@unicode", pkg, prop, "code-points.mjs");
  const m = await import(pathToFileURL(file).href);
  return m.default;
}
const u9 = (p) => codePoints("unicode-9.0.0", p);
const e11 = (p) => codePoints("unicode-11.0.0", "Binary_Property/" + p);

// The flag bits, in the order of `mod flags` in the generated file.
const FLAGS = [
  ["EXT", "Word_Break Format, Extend or ZWJ (the `ExtFmtZwj` that may follow any character)"],
  ["PRES", "U+FE0E or U+FE0F (presentation selectors, left out of `ExtFmtZwjSansPresSel`)"],
  ["FE0F", "U+FE0F (emoji presentation selector)"],
  ["KEYCAP_BASE", "`[0-9#*]`"],
  ["KEYCAP", "U+20E3 (combining enclosing keycap)"],
  ["ACCIDENTAL", "`[©®™\\u3030\\u303D]`"],
  ["RI", "Word_Break Regional_Indicator"],
  ["EMOJI", "Emoji (Emoji 11.0)"],
  ["EMOJI_MODIFIER", "Emoji_Modifier (Emoji 11.0)"],
  ["EMOJI_MODIFIER_BASE", "Emoji_Modifier_Base (Emoji 11.0)"],
  ["EXT_PICT", "Extended_Pictographic (Emoji 11.0)"],
  ["ZWJ", "Word_Break ZWJ"],
  ["TAG_SPEC", "U+E0020..U+E007E"],
  ["TAG_TERM", "U+E007F"],
  ["AHLETTER", "Word_Break ALetter or Hebrew_Letter"],
  ["HEBREW", "Word_Break Hebrew_Letter"],
  ["NUMERIC", "Word_Break Numeric, or a decimal digit (Nd) of the Halfwidth and Fullwidth Forms block"],
  ["KATAKANA", "Word_Break Katakana"],
  ["MID_LETTER", "Word_Break MidLetter, MidNumLet or Single_Quote"],
  ["MID_NUM", "Word_Break MidNum, MidNumLet or Single_Quote"],
  ["EXTEND_NUM_LET", "Word_Break ExtendNumLet"],
  ["SINGLE_QUOTE", "Word_Break Single_Quote"],
  ["DOUBLE_QUOTE", "Word_Break Double_Quote"],
  ["HAN", "Script Han"],
  ["HIRAGANA", "Script Hiragana"],
  ["COMPLEX_CONTEXT", "Line_Break Complex_Context (SA)"],
];
const bit = Object.fromEntries(FLAGS.map(([name], i) => [name, 1 << i]));
const mask = new Uint32Array(0x110000);
const set = (cps, name) => {
  for (const cp of cps) mask[cp] |= bit[name];
};
const range = (a, b) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

for (const p of ["Format", "Extend", "ZWJ"]) set(await u9("Word_Break/" + p), "EXT");
set([0xfe0e, 0xfe0f], "PRES");
set([0xfe0f], "FE0F");
set([..."0123456789#*"].map((c) => c.codePointAt(0)), "KEYCAP_BASE");
set([0x20e3], "KEYCAP");
set([0xa9, 0xae, 0x2122, 0x3030, 0x303d], "ACCIDENTAL");
set(await u9("Word_Break/Regional_Indicator"), "RI");
set(await e11("Emoji"), "EMOJI");
set(await e11("Emoji_Modifier"), "EMOJI_MODIFIER");
set(await e11("Emoji_Modifier_Base"), "EMOJI_MODIFIER_BASE");
set(await e11("Extended_Pictographic"), "EXT_PICT");
set(await u9("Word_Break/ZWJ"), "ZWJ");
set(range(0xe0020, 0xe007e), "TAG_SPEC");
set([0xe007f], "TAG_TERM");
for (const p of ["ALetter", "Hebrew_Letter"]) set(await u9("Word_Break/" + p), "AHLETTER");
set(await u9("Word_Break/Hebrew_Letter"), "HEBREW");
set(await u9("Word_Break/Numeric"), "NUMERIC");
{
  const nd = new Set(await u9("General_Category/Decimal_Number"));
  set((await u9("Block/Halfwidth_And_Fullwidth_Forms")).filter((cp) => nd.has(cp)), "NUMERIC");
}
set(await u9("Word_Break/Katakana"), "KATAKANA");
for (const p of ["MidLetter", "MidNumLet", "Single_Quote"]) set(await u9("Word_Break/" + p), "MID_LETTER");
for (const p of ["MidNum", "MidNumLet", "Single_Quote"]) set(await u9("Word_Break/" + p), "MID_NUM");
set(await u9("Word_Break/ExtendNumLet"), "EXTEND_NUM_LET");
set(await u9("Word_Break/Single_Quote"), "SINGLE_QUOTE");
set(await u9("Word_Break/Double_Quote"), "DOUBLE_QUOTE");
set(await u9("Script/Han"), "HAN");
set(await u9("Script/Hiragana"), "HIRAGANA");
set(await u9("Line_Break/Complex_Context"), "COMPLEX_CONTEXT");

// Classes: distinct masks, class 0 being "no flag"; ranges: (first code point, class), each running to the
// next one's start.
const classes = [0];
const classOf = new Map([[0, 0]]);
const ranges = [];
let prev = -1;
for (let cp = 0; cp < 0x110000; cp++) {
  const m = mask[cp];
  if (!classOf.has(m)) {
    classOf.set(m, classes.length);
    classes.push(m);
  }
  const c = classOf.get(m);
  if (c !== prev) {
    ranges.push([cp, c]);
    prev = c;
  }
}

const hex = (n) => "0x" + n.toString(16).toUpperCase();
let out = "";
out += "//! Generated by `tests/oracles/unicode/generate.mjs` from Unicode 9.0 and Emoji 11.0 data (the versions\n";
out += "//! Lucene 8's `StandardTokenizer` grammar is built with); do not edit by hand.\n\n";
out += "/// Flag bits of a character class: the character sets the tokenizer grammar is written in.\n";
out += "#[allow(dead_code)]\npub mod flags {\n";
FLAGS.forEach(([name, doc], i) => {
  out += `    /// ${doc}.\n    pub const ${name}: u32 = 1 << ${i};\n`;
});
out += "}\n\n";
out += "/// Per class: its flags. Class 0 has none.\n";
out += `pub const CLASS_FLAGS: [u32; ${classes.length}] = [${classes.map(hex).join(", ")}];\n\n`;
out += "/// `(first code point, class)`, ascending; each range runs up to the next one's first code point.\n";
out += `pub const RANGES: [(u32, u8); ${ranges.length}] = [${ranges.map(([a, c]) => `(${hex(a)}, ${c})`).join(", ")}];\n`;
if (classes.length > 255) throw new Error("too many classes");
process.stdout.write(out);
