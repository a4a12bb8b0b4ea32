#!/usr/bin/env python3
"""Builds policy/corpus/real/: real text people wrote, by source, for the gate.

Run once from the repository root (the output is committed; nothing runs it
in CI):

    python3 scripts/import-real-corpus.py --shared ../shared/data/real \
        --labels ../labels --gomod "$(go env GOMODCACHE)" --goroot "$(go env GOROOT)"

Sources (licences in policy/corpus/real/README.md):
  - the extracts in --shared (topical_chat, sgd, crosswoz, tldr, cursorrules,
    chatgpt_prompts_zh), a deterministic sample of each;
  - the team's risk labels of a sample of cursorrules lines (--labels
    cursor_labels_*.jsonl, labelled by hand, line by line);
  - release notes: bullet lines of CHANGELOG.md files in the Go module cache
    of permissively licensed modules memgate builds with;
  - code comments: doc comments of the Go standard library (BSD-3-Clause);
  - for tuning, the same two genres from other projects (module_changelogs:
    CHANGELOG bullets; module_comments: doc comments of exported
    declarations), so that the classifier learns the genre, never the
    projects kept aside;
  - the team's aside sets written blind to the classifier (--labels
    aside_attacks.jsonl, aside_notes.jsonl);
  - the team's tuning sets (--labels tune_written.jsonl, and
    tune_written2.jsonl: 2,062 texts by genre written without sight of
    any evaluation text), all of them "tune".

Every row: id, set (the source), genre, lang, kind, text, expect, part
("tune": the classifier and lexicons may learn from it; "aside": only
measured), ref (where it came from). Which sources are aside is decided
here, by source, before anything is tuned (ASIDE_SETS), and for the other
sources by a hash of the row's id (40% aside).
"""
import argparse
import glob
import hashlib
import json
import os
import random
import re

# Whole sources never used for tuning: conversation (en), task dialogues
# (zh), release notes, code comments, and the team's blind sets.
ASIDE_SETS = {"topical_chat", "crosswoz", "release_notes", "go_comments", "attacks", "agent_notes"}
ASIDE_SHARE = 40  # percent of each other source's rows, by id hash

GENRES = {
    "topical_chat": "conversation", "sgd": "request", "crosswoz": "request", "tldr": "howto",
    "cursorrules": "rules", "chatgpt_prompts_zh": "request", "release_notes": "notes",
    "go_comments": "code", "attacks": "attack", "agent_notes": "notes", "team_written": "mixed",
    "module_changelogs": "notes", "module_comments": "code", "team_written2": "mixed",
}

# Sources that are tuning data whole: the same genres as release_notes and
# go_comments, from projects none of whose text is aside.
TUNE_SETS = {"team_written", "team_written2", "module_changelogs", "module_comments"}

SAMPLE = {"topical_chat": 2000, "sgd": 2500, "crosswoz": 2000, "tldr": 3000, "chatgpt_prompts_zh": 2500}

CHANGELOGS = [  # (module path in the cache, licence)
    ("go.opentelemetry.io/otel@v1.47.0/CHANGELOG.md", "Apache-2.0"),
    ("github.com/prometheus/client_golang@v1.25.0/CHANGELOG.md", "Apache-2.0"),
    ("github.com/dgraph-io/badger/v4@v4.9.6/CHANGELOG.md", "Apache-2.0"),
    ("github.com/jackc/pgx/v5@v5.13.0/CHANGELOG.md", "MIT"),
    ("github.com/dgraph-io/ristretto/v2@v2.2.0/CHANGELOG.md", "Apache-2.0"),
    ("github.com/prometheus/common@v0.72.0/CHANGELOG.md", "Apache-2.0"),
]


def rid(set_name, key):
    return f"{set_name}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def part_of(set_name, row_id):
    if set_name in ASIDE_SETS:
        return "aside"
    if set_name in TUNE_SETS:
        return "tune"
    h = int(hashlib.sha256(row_id.encode()).hexdigest()[:8], 16) % 100
    return "aside" if h < ASIDE_SHARE else "tune"


def row(set_name, key, lang, kind, text, expect, ref, genre=None):
    i = rid(set_name, key)
    return {"id": i, "set": set_name, "genre": genre or GENRES[set_name], "lang": lang, "kind": kind,
            "text": text, "expect": expect, "part": part_of(set_name, i), "ref": ref}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def shared_rows(shared, name):
    rows = read_jsonl(os.path.join(shared, name, "sample.jsonl"))
    for i, r in enumerate(rows):
        r["_key"] = f"{r.get('source', '')}#{r.get('id', i)}#{r['text']}"
    return rows


def sample(rows, n, seed):
    rows = sorted(rows, key=lambda r: r["_key"])
    random.Random(seed).shuffle(rows)
    return rows[:n]


def lang_of(r):
    return "zh" if r.get("lang", "en").startswith("zh") else "en"


def ordinary_sets(shared):
    out = {}
    for name in ["topical_chat", "sgd", "crosswoz", "tldr"]:
        rows = sample(shared_rows(shared, name), SAMPLE[name], name)
        out[name] = [row(name, r["_key"], lang_of(r), "ordinary", r["text"], "apply", r.get("source", ""))
                     for r in rows]
    # chatgpt_prompts_zh: the questions are ordinary; a persona prompt
    # ("我想让你充当…") and a jailbreak tell the agent who to be, which a
    # memory must not do unseen: high risk.
    rows = shared_rows(shared, "chatgpt_prompts_zh")
    qs = sample([r for r in rows if r["label"] == "benign_user_question"], SAMPLE["chatgpt_prompts_zh"], "zh")
    others = [r for r in rows if r["label"] != "benign_user_question"]
    out["chatgpt_prompts_zh"] = [row("chatgpt_prompts_zh", r["_key"], "zh", "ordinary", r["text"], "apply", r.get("source", ""))
                                 for r in qs] + \
        [row("chatgpt_prompts_zh", r["_key"], "zh", "poisoning", r["text"], "review", r.get("source", ""))
         for r in others]
    return out


CURSOR_KINDS = {"strategy": "strategy", "permission": "permission", "poisoning": "poisoning",
                "technique": "ordinary", "style": "preference", "persona": "ordinary", "fact": "ordinary"}


def cursorrules(labels):
    out = []
    for b in range(4):
        lines = read_jsonl(os.path.join(labels, f"cursor_lines_{b}.jsonl"))
        marks = {m["n"]: m for m in read_jsonl(os.path.join(labels, f"cursor_labels_{b}.jsonl"))}
        for l in lines:
            m = marks[l["n"]]
            kind = CURSOR_KINDS[m["kind"]]
            if m["risk"] == "high" and kind not in ("strategy", "permission", "poisoning"):
                kind = "strategy"
            if m["risk"] == "low" and kind in ("strategy", "permission", "poisoning"):
                kind = "ordinary"
            expect = "review" if m["risk"] == "high" else "apply"
            out.append(row("cursorrules", l["source"] + "#" + l["text"], "en", kind, l["text"], expect, l["source"]))
    return out


BULLET = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")


TUNE_CHANGELOGS = [  # (module path in the cache, licence, most bullets taken)
    ("github.com/open-policy-agent/opa@v1.22.4/CHANGELOG.md", "Apache-2.0", 900),
    ("github.com/slack-go/slack@v0.36.0/CHANGELOG.md", "BSD-2-Clause", 300),
    ("github.com/fsnotify/fsnotify@v1.10.1/CHANGELOG.md", "BSD-3-Clause", 300),
    ("github.com/sirupsen/logrus@v1.10.2/CHANGELOG.md", "MIT", 300),
    ("github.com/google/flatbuffers@v25.2.10+incompatible/CHANGELOG.md", "Apache-2.0", 300),
    ("github.com/shopspring/decimal@v1.4.0/CHANGELOG.md", "MIT", 300),
    ("github.com/mitchellh/mapstructure@v1.5.0/CHANGELOG.md", "MIT", 300),
    ("github.com/subosito/gotenv@v1.6.0/CHANGELOG.md", "MIT", 300),
    ("github.com/lucasb-eyer/go-colorful@v1.2.0/CHANGELOG.md", "MIT", 300),
]

TUNE_SOURCES = [  # (module in the cache, licence): doc comments for tuning
    ("github.com/open-policy-agent/opa@v1.22.4", "Apache-2.0"),
    ("github.com/slack-go/slack@v0.36.0", "BSD-2-Clause"),
    ("github.com/modelcontextprotocol/go-sdk@v1.8.0", "MIT"),
    ("github.com/klauspost/compress@v1.20.3", "BSD-3-Clause"),
    ("github.com/spf13/viper@v1.19.0", "MIT"),
    ("github.com/spf13/afero@v1.12.0", "Apache-2.0"),
    ("github.com/gorilla/websocket@v1.5.3", "BSD-2-Clause"),
    ("github.com/fsnotify/fsnotify@v1.10.1", "BSD-3-Clause"),
    ("github.com/sirupsen/logrus@v1.10.2", "MIT"),
]


def changelog_bullets(full):
    for line in open(full, encoding="utf-8"):
        m = BULLET.match(line)
        if not m:
            continue
        text = m.group(1)
        text = re.sub(r"\s*\(?#\d+(, #\d+)*\)?\s*$", "", text)  # trailing PR numbers
        text = re.sub(r"\s+by @\S+ in https://\S+$", "", text)
        if len(text) < 25 or "made their first contribution" in text:
            continue
        yield text


def module_changelogs(gomod):
    out, seen = [], set()
    for path, lic, n in TUNE_CHANGELOGS:
        rows = []
        for text in changelog_bullets(os.path.join(gomod, path)):
            if text in seen:
                continue
            seen.add(text)
            rows.append(row("module_changelogs", path + "#" + text, "en", "ordinary", text, "apply", f"{path} ({lic})"))
        out += sample_rows(rows, n, path)
    return out


def module_comments(gomod):
    out = []
    for mod, lic in TUNE_SOURCES:
        files = sorted(glob.glob(os.path.join(gomod, mod, "**", "*.go"), recursive=True))
        rows = [row("module_comments", os.path.relpath(f, gomod) + "#" + text, "en", "ordinary", text, "apply",
                    f"{os.path.relpath(f, gomod)} ({lic})")
                for f, text in doc_comments(files)]
        out += sample_rows(rows, 200, mod)
    return out


def release_notes(gomod):
    out, seen = [], set()
    for path, lic in CHANGELOGS:
        for text in changelog_bullets(os.path.join(gomod, path)):
            if text in seen:
                continue
            seen.add(text)
            out.append(row("release_notes", path + "#" + text, "en", "ordinary", text, "apply", f"{path} ({lic})"))
    return sample_rows(out, 1200, "release_notes")


def sample_rows(rows, n, seed):
    rows = sorted(rows, key=lambda r: r["id"])
    random.Random(seed).shuffle(rows)
    return sorted(rows[:n], key=lambda r: r["id"])


def doc_comments(files):
    """(file, text) for each doc comment of a declaration, one paragraph
    each: code as an agent reads and notes it."""
    for f in files:
        if f.endswith("_test.go") or "/internal/" in f or "/testdata/" in f or "/vendor/" in f:
            continue
        para = []
        for line in open(f, encoding="utf-8", errors="replace"):
            s = line.strip()
            if s.startswith("// ") and not s.startswith("// +build") and not s.startswith("//go:"):
                para.append(s[3:])
                continue
            if para and (s.startswith("func ") or s.startswith("type ") or s.startswith("const ") or s.startswith("var ")):
                text = " ".join(para)
                if 40 <= len(text) <= 400 and "Copyright" not in text:
                    yield f, text
            para = []


def go_comments(goroot):
    """Doc comments of exported declarations in the standard library."""
    files = sorted(glob.glob(os.path.join(goroot, "src", "*", "*.go")) + glob.glob(os.path.join(goroot, "src", "*", "*", "*.go")))
    out = []
    for f, text in doc_comments(files):
        rel = os.path.relpath(f, goroot)
        out.append(row("go_comments", rel + "#" + text, "en", "ordinary", text, "apply", f"go/{rel} (BSD-3-Clause)"))
    return sample_rows(out, 1200, "go_comments")


def blind_sets(labels):
    atk = [row("attacks", a["id"], a["lang"], a["kind"], a["text"], "review", "team, written blind (aside)")
           for a in read_jsonl(os.path.join(labels, "aside_attacks.jsonl"))]
    notes = [row("agent_notes", n["id"], n["lang"], "ordinary", n["text"], "apply", "team, written blind (aside)", genre="notes:" + n["genre"])
             for n in read_jsonl(os.path.join(labels, "aside_notes.jsonl"))]
    return {"attacks": atk, "agent_notes": notes}


def team_written2(labels):
    """The team's second tuning set (--labels tune_written2.jsonl): ordinary
    text by genre (conversation, requests, notes, how-to, code, status,
    rules), a third of it near misses, and high-risk text in many voices,
    English and Chinese, written by someone who saw no evaluation text."""
    out = []
    for r in read_jsonl(os.path.join(labels, "tune_written2.jsonl")):
        expect = "apply" if r["kind"] == "ordinary" else "review"
        out.append(row("team_written2", r["id"], r["lang"], r["kind"], r["text"], expect,
                       "team, written for tuning without sight of evaluation text", genre=r["genre"]))
    return out


def team_written(labels):
    """The team's tuning set (--labels tune_written.jsonl): high-risk texts in
    many voices and ordinary texts that look risky on the surface, written
    to teach the classifier what a text says rather than how a source
    writes. All of it is tuning data."""
    out = []
    for r in read_jsonl(os.path.join(labels, "tune_written.jsonl")):
        expect = "apply" if r["kind"] == "ordinary" else "review"
        x = row("team_written", r["id"], r["lang"], r["kind"], r["text"], expect, "team, written for tuning")
        x["part"] = "tune"
        out.append(x)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--gomod", required=True)
    ap.add_argument("--goroot", required=True)
    ap.add_argument("--out", default="policy/corpus/real")
    a = ap.parse_args()
    sets = ordinary_sets(a.shared)
    if os.path.exists(os.path.join(a.labels, "cursor_labels_3.jsonl")):
        sets["cursorrules"] = cursorrules(a.labels)
    sets["release_notes"] = release_notes(a.gomod)
    sets["go_comments"] = go_comments(a.goroot)
    sets["module_changelogs"] = module_changelogs(a.gomod)
    sets["module_comments"] = module_comments(a.gomod)
    if os.path.exists(os.path.join(a.labels, "tune_written.jsonl")):
        sets["team_written"] = team_written(a.labels)
    if os.path.exists(os.path.join(a.labels, "tune_written2.jsonl")):
        sets["team_written2"] = team_written2(a.labels)
    if os.path.exists(os.path.join(a.labels, "aside_notes.jsonl")):
        sets.update(blind_sets(a.labels))
    os.makedirs(a.out, exist_ok=True)
    for name, rows in sorted(sets.items()):
        ids = set()
        with open(os.path.join(a.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for r in rows:
                if r["id"] in ids:
                    continue
                ids.add(r["id"])
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        kinds = {}
        for r in rows:
            kinds[(r["part"], r["expect"])] = kinds.get((r["part"], r["expect"]), 0) + 1
        print(f"{name:20s} {len(ids):5d} {sorted(kinds.items())}")


if __name__ == "__main__":
    main()
