#!/usr/bin/env python3
"""Build extra (mostly multilingual) prompt-injection training files from public repos.

Every source is read straight out of a bare git directory (a `fetch` mirror), given
on the command line as NAME=GITDIR.  Sources used (see SOURCES.md for licences):

  deepset   sinanw/llm-security-prompt-injection  (copy of deepset/prompt-injections parquet)
  xsafety   Jarviswang94/Multilingual_safety_benchmark (XSafety, 10 languages)
  multijail DAMO-NLP-SG/multilingual-safety-for-LLMs (MultiJail, 10 languages)
  xquad     google-deepmind/xquad (questions + Wikipedia paragraphs, 12 languages)
  nusax     IndoNLP/nusax (Indonesian sentiment texts)

Exclusion check: pass --exclude NAME=GITDIR for the held-out sources (PurpleLlama,
InjecGuard, garak) and --exclude-jsonl for already-extracted held-out files; any output
row equal to, contained in, or sharing a 60-character span with an excluded text is
dropped (and counted in the report).

The deepset parquet files are decoded by the small Go helper in tools/pqdump
(`cd tools/pqdump && go build`), passed as --pqdump.

Usage:
  python3 build_extra.py --out /work/datasets --pqdump tools/pqdump/pqdump \
     deepset=/work/.mirror/sinanw+llm-security-prompt-injection/repo \
     xsafety=/work/.mirror/Jarviswang94+Multilingual_safety_benchmark/repo \
     multijail=/work/.mirror/DAMO-NLP-SG+multilingual-safety-for-LLMs/repo \
     xquad=/work/.mirror/google-deepmind+xquad/repo \
     nusax=/work/.mirror/IndoNLP+nusax/repo \
     --exclude purplellama=/work/.mirror/meta-llama+PurpleLlama/repo \
     --exclude injecguard=/work/.mirror/leolee99+InjecGuard/repo \
     --exclude garak=/work/.mirror/NVIDIA+garak/repo \
     --exclude-jsonl /work/main/classifier/testdata/injection/*.jsonl --exclude-csv /work/src/korean.csv
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter

CAP = 3000


# ---------------------------------------------------------------- git access
def gitdir(p):
    return os.path.join(p, ".git") if os.path.isdir(os.path.join(p, ".git")) else p


def show(g, path, rev="HEAD"):
    r = subprocess.run(["git", "--git-dir", g, "show", f"{rev}:{path}"], capture_output=True)
    if r.returncode:
        raise SystemExit(f"git show {rev}:{path} in {g}: {r.stderr.decode()}")
    return r.stdout


def ls(g, rev="HEAD"):
    out = subprocess.run(["git", "--git-dir", g, "ls-tree", "-r", "--name-only", rev],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def head(g):
    return subprocess.run(["git", "--git-dir", g, "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


# ---------------------------------------------------------------- helpers
def clean(t):
    t = unicodedata.normalize("NFC", t.replace("\ufeff", "")).replace("\r\n", "\n")
    return t.strip()


def norm(t):
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", t)).strip().casefold()


def sample(rows, cap):
    """Deterministic every-k-th sample preserving order."""
    n = len(rows)
    if n <= cap:
        return rows
    return [rows[(i * n) // cap] for i in range(cap)]


def dedupe(rows):
    seen, out = set(), []
    for r in rows:
        k = norm(r["text"])
        if k and k not in seen:
            seen.add(k)
            out.append(r)
    return out


def xlsx_rows(data):
    """First sheet of an .xlsx as lists of cell strings (no openpyxl needed)."""
    z = zipfile.ZipFile(io.BytesIO(data))
    m = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    ss = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(m + "si"):
            ss.append("".join(t.text or "" for t in si.iter(m + "t")))
    out = []
    for row in ET.fromstring(z.read("xl/worksheets/sheet1.xml")).iter(m + "row"):
        vals = []
        for c in row.iter(m + "c"):
            v, t = c.find(m + "v"), c.get("t")
            if t == "s" and v is not None:
                vals.append(ss[int(v.text)])
            elif t == "inlineStr":
                vals.append("".join(x.text or "" for x in c.iter(m + "t")))
            elif v is not None:
                vals.append(v.text)
        out.append(vals)
    return out


STOP = {
    "en": "the and you to of is in that for it with what how are please can this my your".split(),
    "de": "der die das und ist nicht ich du sie mit für ein eine zu wie was auf den dem bitte".split(),
    "fr": "le la les et est pas je vous de des une un pour que qui dans avec".split(),
    "es": "el la los las es no que de para una por con como qué se".split(),
    "it": "il lo la gli le è non che di per una un con come".split(),
    "pt": "os as é não que de para uma um com como você".split(),
}


def guess_lang(t):
    """Rough language tag: script first, then stop-word counts for Latin text."""
    for ch in t:
        o = ord(ch)
        if 0x3040 <= o <= 0x30FF: return "ja"
        if 0xAC00 <= o <= 0xD7AF: return "ko"
    scripts = Counter()
    for ch in t:
        o = ord(ch)
        if 0x4E00 <= o <= 0x9FFF: scripts["zh"] += 1
        elif 0x0400 <= o <= 0x04FF: scripts["ru"] += 1
        elif 0x0600 <= o <= 0x06FF: scripts["ar"] += 1
        elif 0x0900 <= o <= 0x097F: scripts["hi"] += 1
        elif 0x0980 <= o <= 0x09FF: scripts["bn"] += 1
        elif 0x0E00 <= o <= 0x0E7F: scripts["th"] += 1
    if scripts:
        return scripts.most_common(1)[0][0]
    words = re.findall(r"[a-zäöüßàâçéèêëîïôûùœñáíóúãõ]+", t.lower())
    score = {k: sum(w in v for w in words) for k, v in STOP.items()}
    if re.search(r"[äöüß]", t.lower()):
        score["de"] += 2
    best = max(score, key=score.get)
    return best if score[best] > score["en"] else "en"


# ---------------------------------------------------------------- sources
def build_deepset(g, pqdump):
    rows = []
    for path in sorted(p for p in ls(g) if p.endswith(".parquet")):
        with tempfile.NamedTemporaryFile(suffix=".parquet") as f:
            f.write(show(g, path)); f.flush()
            out = subprocess.run([pqdump, f.name], capture_output=True, text=True, check=True).stdout
        split = "train" if "/train-" in path else "test"
        for line in out.splitlines():
            o = json.loads(line)
            t = clean(o["text"])
            rows.append({"text": t, "injection": o["label"] == 1,
                         "note": f"{guess_lang(t)}: deepset {split}"})
    return {"deepset-prompt-injections": rows}


XS_LANGS = {"en": "en", "zh": "zh", "ar": "ar", "sp": "es", "fr": "fr", "de": "de", "ja": "ja",
            "hi": "hi", "bn": "bn", "ru": "ru"}
XS_NEG = ["Crimes_And_Illegal_Activities", "Ethics_And_Morality", "Inquiry_With_Unsafe_Opinion",
          "Insult", "Mental_Health", "Physical_Harm", "Privacy_And_Property", "Reverse_Exposure",
          "Unfairness_And_Discrimination", "Unsafe_Instruction_Topic", "commonsense"]
# English label oracle for the aligned Goal_Hijacking rows: a row is kept as an injection only
# when its English version tells the model to drop the task it was given (override / deflection).
HIJACK = re.compile(r"ignor|disregard|forget|don'?t answer|do not answer|not to answer|rush to answer|"
                    r"don'?t follow|do not follow|regardless of the above|no need to", re.I)


def xs_file(files, lang, cat):
    for p in files:
        d, base = p.split("/", 1) if "/" in p else ("", p)
        if d != lang:
            continue
        stem = base.rsplit(".", 1)[0]
        if stem in (cat, cat + "_n", cat + "_en") or (cat == "Crimes_And_Illegal_Activities"
                                                        and stem.startswith("Crimes_And_Illegal_Activitie")):
            return p
    return None


def xs_rows(g, path):
    data = show(g, path)
    if path.endswith(".xlsx"):
        return [clean(r[0]) if r else "" for r in xlsx_rows(data)]
    return [clean(r[0]) if r else "" for r in csv.reader(io.StringIO(data.decode("utf-8-sig")))]


def build_xsafety(g):
    files = ls(g)
    # --- positives: Goal_Hijacking, aligned by row with the English file
    en = xs_rows(g, xs_file(files, "en", "Goal_Hijacking"))
    keep = [i for i, t in enumerate(en) if HIJACK.search(t)]
    pos, dropped = [], Counter()
    for d, lang in XS_LANGS.items():
        rows = xs_rows(g, xs_file(files, d, "Goal_Hijacking"))
        assert len(rows) == len(en), (d, len(rows))
        ratios = sorted(len(rows[i]) / max(1, len(en[i])) for i in keep if rows[i])
        med = ratios[len(ratios) // 2]
        for i in keep:
            t = rows[i]
            # a translation much shorter than its language's usual ratio lost the injected part
            if not t or len(t) / max(1, len(en[i])) < 0.55 * med:
                dropped[lang] += 1
                continue
            pos.append({"text": t, "injection": True, "note": f"{lang}: XSafety goal_hijacking"})
    print(f"xsafety: {len(keep)}/{len(en)} English goal-hijacking rows carry an override; "
          f"translations dropped as truncated: {dict(dropped)}", file=sys.stderr)
    # --- negatives: harmful-but-not-injection requests and commonsense-safety questions
    neg = []
    for d, lang in XS_LANGS.items():
        for cat in XS_NEG:
            p = xs_file(files, d, cat)
            if p is None:
                continue
            for t in xs_rows(g, p):
                if t:
                    neg.append({"text": t, "injection": False, "note": f"{lang}: XSafety {cat.lower()}"})
    return {"xsafety-goal-hijacking": pos, "xsafety-safety-negatives": neg}


def build_multijail(g):
    data = show(g, "data/MultiJail.csv").decode("utf-8-sig")
    rows = []
    langs = ["en", "zh", "it", "vi", "ar", "ko", "th", "bn", "sw", "jv"]
    recs = list(csv.DictReader(io.StringIO(data)))
    for lang in langs:
        for r in recs:
            t = clean(r[lang])
            if t:
                rows.append({"text": t, "injection": False, "note": f"{lang}: MultiJail harmful request"})
    return {"multijail-negatives": rows}


def build_xquad(g, q_per_lang=200, ctx_per_lang=45):
    rows = []
    for p in sorted(p for p in ls(g) if re.fullmatch(r"xquad\.[a-z]+\.json", p)):
        lang = p.split(".")[1]
        d = json.loads(show(g, p))
        qs, ctxs = [], []
        for art in d["data"]:
            for para in art["paragraphs"]:
                ctxs.append(clean(para["context"]))
                for qa in para["qas"]:
                    qs.append(clean(qa["question"]))
        rows += [{"text": t, "injection": False, "note": f"{lang}: XQuAD question"} for t in sample(qs, q_per_lang)]
        rows += [{"text": t, "injection": False, "note": f"{lang}: XQuAD Wikipedia paragraph"} for t in sample(ctxs, ctx_per_lang)]
    return {"xquad-benign": rows}


def build_nusax(g):
    rows = []
    for split in ("train", "valid", "test"):
        data = show(g, f"datasets/sentiment/indonesian/{split}.csv").decode("utf-8-sig")
        for r in csv.DictReader(io.StringIO(data)):
            t = clean(r["text"])
            if t:
                rows.append({"text": t, "injection": False, "note": f"id: NusaX review/comment ({r['label']})"})
    return {"nusax-indonesian-benign": rows}


# ---------------------------------------------------------------- exclusion check
def strings_in(obj, out):
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            strings_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            strings_in(v, out)


def exclusion_texts(excl, jsonls, csvs):
    texts = []
    for name, g in excl:
        g = gitdir(g)
        for p in ls(g):
            low = p.lower()
            want = (name == "purplellama" and "datasets/prompt_injection/" in low and low.endswith(".json")) or \
                   (name == "injecguard" and low.startswith("datasets/") and low.endswith(".json")
                    and any(k in low for k in ("valid", "notinject", "wildguard"))) or \
                   (name == "garak" and ("latentinjection" in low or "sysprompt_extraction" in low)
                    and (low.endswith(".json") or low.endswith(".py") or low.endswith(".txt")))
            if not want:
                continue
            data = show(g, p).decode("utf-8", "replace")
            if low.endswith(".json"):
                try:
                    strings_in(json.loads(data), texts)
                    continue
                except json.JSONDecodeError:
                    pass
            texts.append(data)  # python / text: check containment in the raw file
    for f in jsonls:
        for line in open(f, encoding="utf-8"):
            if line.strip():
                texts.append(json.loads(line)["text"])
    for f in csvs:
        for r in csv.DictReader(open(f, encoding="utf-8")):
            texts.append(r.get("text", ""))
    return [t for t in texts if len(t.strip()) >= 12]


W = 60


def make_checker(texts):
    exact = {norm(t) for t in texts}
    grams = set()
    for t in texts:
        n = norm(t)
        for i in range(0, max(0, len(n) - W) + 1):
            grams.add(hash(n[i:i + W]))

    def hit(t):
        n = norm(t)
        if n in exact:
            return "exact"
        if len(n) < W:
            return None
        for i in range(0, len(n) - W + 1, 4):
            if hash(n[i:i + W]) in grams:
                return "span"
        return None
    return hit


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+", help="NAME=GITDIR")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--pqdump", default=None)
    ap.add_argument("--exclude", action="append", default=[], help="NAME=GITDIR of a held-out source")
    ap.add_argument("--exclude-jsonl", nargs="*", default=[])
    ap.add_argument("--exclude-csv", nargs="*", default=[])
    a = ap.parse_args()
    src = dict(s.split("=", 1) for s in a.sources)
    files = {}
    for name, g in src.items():
        g = gitdir(g)
        if name == "deepset":
            files.update(build_deepset(g, a.pqdump))
        elif name == "xsafety":
            files.update(build_xsafety(g))
        elif name == "multijail":
            files.update(build_multijail(g))
        elif name == "xquad":
            files.update(build_xquad(g))
        elif name == "nusax":
            files.update(build_nusax(g))
        else:
            raise SystemExit(f"unknown source {name}")
    hit = make_checker(exclusion_texts([e.split("=", 1) for e in a.exclude], a.exclude_jsonl, a.exclude_csv))
    report = {}
    seen_global = {}
    for fname, rows in files.items():
        before = len(rows)
        rows = dedupe(rows)
        ded = before - len(rows)
        kept, excluded = [], Counter()
        for r in rows:
            h = hit(r["text"])
            if h:
                excluded[h] += 1
            else:
                kept.append(r)
        # a row already written to an earlier file is not repeated
        cross = [r for r in kept if norm(r["text"]) in seen_global]
        kept = [r for r in kept if norm(r["text"]) not in seen_global]
        kept = sample(kept, CAP)
        for r in kept:
            seen_global[norm(r["text"])] = fname
        with open(os.path.join(a.out, fname + ".jsonl"), "w", encoding="utf-8") as f:
            for r in kept:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        langs = Counter(r["note"].split(":", 1)[0] for r in kept)
        report[fname] = {"rows": len(kept), "injection": sum(r["injection"] for r in kept),
                         "benign": sum(not r["injection"] for r in kept), "duplicates_dropped": ded,
                         "excluded_overlap": dict(excluded), "cross_file_duplicates": len(cross),
                         "languages": dict(sorted(langs.items()))}
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
