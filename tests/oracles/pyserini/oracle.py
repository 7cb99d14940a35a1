"""The original WebShop search engine as a test oracle: pyserini 0.17.0 (Anserini 0.14.3, Lucene 8.11).

Builds the Lucene index over the real products the way WebShop does (its convert_product_file_format.py,
then `python -m pyserini.index.lucene --collection JsonCollection --generator DefaultLuceneDocumentGenerator
--storePositions --storeDocvectors --storeRaw`), runs every distinct real human query through
`LuceneSearcher.search(query, k=50)` as WebShop's engine does, and writes what Lucene answered as JSON for
tests/webshop_search_lucene.rs:

- search.json: per query, the top 50 as WebShop gets them (asin, score rounded by Anserini to 1e-4) and the
  bits of Lucene's own scores for them (before that rounding);
- analysis.json: per product its indexed text, Lucene's raw StandardTokenizer tokens and its analysed terms
  (checked here against the index's own document vector), the same per query, and per probe text of
  probes.txt;
- sweep.json: for every Unicode code point, where the StandardTokenizer cuts a set of short texts around it,
  run-length encoded over code points.

Run through scripts/pyserini-oracle, which sets up the virtual environment and Java and caches the output.
Usage: oracle.py SHARED_WEBSHOP_DIR OUT_DIR
       oracle.py --run-indexer ARGS...   (pyserini.index.lucene with the stubs below; used internally)
"""

import importlib.abc
import importlib.machinery
import json
import os
import runpy
import shutil
import struct
import subprocess
import sys
import time
import types

# Text search needs none of pyserini's dense-retrieval stack (torch, transformers, faiss, ...), which its
# package __init__ files import anyway: those modules, and the third-party ones on the way to LuceneSearcher,
# are replaced by stubs whose every attribute is a dummy class.
STUB_TOP = {"numpy", "pandas", "tqdm"}
STUB_PKGS = ("pyserini.encode", "pyserini.search.faiss")


class _AnyMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any

    def __call__(cls, *args, **kwargs):
        return _Any


class _Any(metaclass=_AnyMeta):
    pass


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in STUB_TOP or any(fullname == p or fullname.startswith(p + ".") for p in STUB_PKGS):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _StubFinder())


def log(msg):
    print(f"pyserini-oracle: {msg}", file=sys.stderr, flush=True)


def webshop_documents(products_path):
    """The documents WebShop indexes, built as its load_products + convert_product_file_format.py build them.

    A product without bullet points (WebShop would fail on `BulletPoints[0]`) gets an empty string there, as
    gigscope does; the real products all have one.
    """
    with open(products_path) as f:
        products = json.load(f)
    seen = set()
    docs = []
    for p in products:
        asin = p["asin"]
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        sd = p["small_description"]
        bullets = sd if isinstance(sd, list) else [sd]
        options = {}
        for name, contents in (p.get("customization_options") or {}).items():
            if contents is None:
                continue
            options[name.lower()] = [c["value"].strip().replace("/", " | ").lower() for c in contents]
        option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in options.items())
        contents = " ".join([p["name"], p["full_description"], bullets[0] if bullets else "", option_text]).lower()
        docs.append({"id": asin, "contents": contents, "product": p})
    return docs


def human_queries(shared):
    with open(os.path.join(shared, "goal_query_map.json")) as f:
        goal_queries = json.load(f)
    return sorted({q for queries in goal_queries.values() for q in queries})


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


class Lucene:
    """Lucene's analysis through pyjnius."""

    def __init__(self):
        from jnius import autoclass
        from pyserini.analysis import get_lucene_analyzer

        self.utils = autoclass("io.anserini.analysis.AnalyzerUtils")
        # The analyzer IndexCollection and LuceneSearcher use by default (English, Porter, stop words).
        self.english = get_lucene_analyzer()
        # The StandardTokenizer alone, no filter: its tokens are substrings of the text.
        builder = autoclass("org.apache.lucene.analysis.custom.CustomAnalyzer").builder()
        self.tokenizer = builder.withTokenizer("standard", autoclass("java.util.HashMap")()).build()

    def _run(self, analyzer, text):
        # One JNI call for the whole list: tokens never contain ", " (they contain no space).
        joined = self.utils.analyze(analyzer, text).toString()[1:-1]
        return joined.split(", ") if joined else []

    def terms(self, text):
        return self._run(self.english, text)

    def tokens(self, text):
        return self._run(self.tokenizer, text)

    def spans(self, text):
        """Raw tokens as (start, end) code point offsets."""
        out = []
        pos = 0
        for tok in self.tokens(text):
            # The first occurrence at or after the previous token's end is the token: the scanner tried
            # every position before it and matched nothing there, which it would have had the token
            # started there.
            start = text.index(tok, pos)
            pos = start + len(tok)
            out.append((start, pos))
        return out


class RawSearcher:
    """What LuceneSearcher.search does (Anserini's bag-of-words query on BM25 k1 0.9, b 0.4, top k by score
    then by docid), on a Lucene IndexSearcher of our own, which gives the scores Anserini then rounds."""

    def __init__(self, index):
        from jnius import autoclass, cast
        from pyserini.analysis import get_lucene_analyzer

        self.reader = autoclass("org.apache.lucene.index.DirectoryReader").open(
            autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(index).toPath()))
        self.searcher = autoclass("org.apache.lucene.search.IndexSearcher")(
            cast("org.apache.lucene.index.IndexReader", self.reader))
        self.searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(0.9, 0.4))
        self.generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self.analyzer = get_lucene_analyzer()
        self.sort = autoclass("io.anserini.search.SimpleSearcher").BREAK_SCORE_TIES_BY_DOCID

    def search(self, q, k=50):
        query = self.generator.buildQuery("contents", self.analyzer, q)
        top = self.searcher.search(query, k, self.sort, True)
        return [(self.reader.document(sd.doc).get("id"), f32_bits(sd.score)) for sd in top.scoreDocs]


# Short texts around each code point c, in which the tokenizer's cuts reveal the classes c belongs to.
SWEEP_TEMPLATES = [
    "{c}",
    "{c}{c}",
    "a{c}a",
    "1{c}1",
    "{c}a",
    "{c}1",
    "_{c}_",
    "\u30a2{c}\u30a2",
    "\u05d0{c}\u05d0",
    "\u05d0{c}",
    "\u0e01{c}\u0e01",
    "\u4e2d{c}",
    "\U0001f600{c}",
    "{c}\u200d\U0001f600",
    "\U0001f600\u200d{c}",
    "{c}\u20e3",
    "{c}\ufe0f\u20e3",
    "{c}\U0001f3fd",
    "{c}\U000e0067\U000e007f",
]
# Probes per tokenizer call. Probes are separated by a space, at which no rule of the grammar goes on.
SWEEP_BATCH = 4000


def sweep(lucene):
    """For every code point (U+0000 and surrogates excepted): the token spans of each template, relative to
    the template's start, run-length encoded as [first, last, signature index] over code points."""
    signatures = {}
    ranges = []
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    for b in range(0, len(cps), SWEEP_BATCH):
        batch = cps[b : b + SWEEP_BATCH]
        per_cp = [[] for _ in batch]
        for template in SWEEP_TEMPLATES:
            probes = [template.format(c=chr(cp)) for cp in batch]
            text = " ".join(probes)
            starts = []
            pos = 0
            for p in probes:
                starts.append(pos)
                pos += len(p) + 1
            spans = lucene.spans(text)
            k = 0
            for i, start in enumerate(starts):
                end = start + len(probes[i])
                mine = []
                while k < len(spans) and spans[k][0] < end:
                    mine.append(f"{spans[k][0] - start}-{spans[k][1] - start}")
                    k += 1
                per_cp[i].append(",".join(mine))
        for cp, sig in zip(batch, per_cp):
            sig = "|".join(sig)
            idx = signatures.setdefault(sig, len(signatures))
            if ranges and ranges[-1][2] == idx and ranges[-1][1] + 1 == cp:
                ranges[-1][1] = cp
            elif ranges and ranges[-1][2] == idx and ranges[-1][1] == 0xD7FF and cp == 0xE000:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp, idx])
        if b % (SWEEP_BATCH * 50) == 0:
            log(f"sweep: U+{batch[0]:04X}, {len(ranges)} ranges")
    return {"templates": SWEEP_TEMPLATES, "signatures": list(signatures), "ranges": ranges}


def build_index(docs, work):
    collection = os.path.join(work, "collection")
    index = os.path.join(work, "index")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(collection)
    with open(os.path.join(collection, "documents.jsonl"), "w") as f:
        for doc in docs:
            f.write(json.dumps(doc) + "\n")
    cmd = [sys.executable, os.path.abspath(__file__), "--run-indexer",
           "--collection", "JsonCollection", "--input", collection, "--index", index,
           "--generator", "DefaultLuceneDocumentGenerator", "--threads", "1",
           "--storePositions", "--storeDocvectors", "--storeRaw"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return index


def main(shared, out):
    t0 = time.time()
    docs = webshop_documents(os.path.join(shared, "products_394.json"))
    queries = human_queries(shared)
    os.makedirs(out, exist_ok=True)
    index = build_index(docs, os.path.join(out, "work"))
    log(f"indexed {len(docs)} products ({time.time() - t0:.0f} s)")

    from pyserini.index.lucene import IndexReader
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(index)
    reader = IndexReader(index)
    lucene = Lucene()
    stats = reader.stats()

    raw = RawSearcher(index)
    results = []
    for q in queries:
        # What WebShop's engine gets: Anserini's top 50 (score, then docid), scores rounded to 1e-4.
        hits = [[h.docid, h.score] for h in searcher.search(q, k=50)]
        # The same search on Lucene directly, for the scores before Anserini rounds them.
        lucene_hits = raw.search(q)
        if [h[0] for h in hits] != [h[0] for h in lucene_hits]:
            raise SystemExit(f"Lucene's own ranking differs from LuceneSearcher's for {q!r}")
        results.append({"query": q, "hits": hits, "lucene_bits": [bits for _, bits in lucene_hits]})
    log(f"searched {len(queries)} queries ({time.time() - t0:.0f} s)")
    with open(os.path.join(out, "search.json"), "w") as f:
        json.dump({"lucene": "8.11 (Anserini 0.14.3, pyserini 0.17.0)", "documents": len(docs), "stats": stats,
                   "queries": results}, f)

    products = []
    for doc in docs:
        terms = lucene.terms(doc["contents"])
        vector = reader.get_document_vector(doc["id"])
        counts = {}
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
        if counts != vector:
            raise SystemExit(f"the analyzer's terms for {doc['id']} are not what the index holds")
        products.append({"asin": doc["id"], "text": doc["contents"], "tokens": lucene.tokens(doc["contents"]),
                         "terms": terms})
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes.txt"), encoding="utf-8") as f:
        probe_texts = [
            line.rstrip("\n").replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
            for line in f
            if not line.startswith("#")
        ]
    # Long words, past the 255-unit scanner buffer (a surrogate pair straddling its end included).
    probe_texts += ["a" * 600, "x" * 254 + "\U0001d41a" * 3, "1" * 300 + " " + "ab" * 200, "\U0001f600" * 300,
                    "a'" * 200, "\u4e2d" * 300, "\u0e01" * 300]
    analysis = {
        "products": products,
        "queries": [{"query": q, "tokens": lucene.tokens(q), "terms": lucene.terms(q)} for q in queries],
        "probes": [{"text": t, "tokens": lucene.tokens(t), "terms": lucene.terms(t)} for t in probe_texts],
    }
    with open(os.path.join(out, "analysis.json"), "w") as f:
        json.dump(analysis, f, ensure_ascii=False)
    log(f"analysed products, queries and {len(probe_texts)} probes ({time.time() - t0:.0f} s)")

    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump(sweep(lucene), f, ensure_ascii=False)
    log(f"swept every code point ({time.time() - t0:.0f} s)")
    shutil.rmtree(os.path.join(out, "work"), ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run-indexer":
        sys.argv = ["pyserini.index.lucene"] + sys.argv[2:]
        runpy.run_module("pyserini.index.lucene", run_name="__main__", alter_sys=True)
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
