package markdown

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Memory files as OpenClaw, Claude Code and Codex keep them.

const mdMemory = `# MEMORY.md

## Preferences

- Alice prefers short answers.
- Replies in English unless asked otherwise; long explanations are
  welcome when she asks "why".
- 技术术语使用简体中文，
  代码注释保持英文。

## Rules

- Never push to main without a review.
- Deploys to production need Bob's approval.

## Notes

Alice works from Berlin and is usually online between 9:00 and 18:00
CET. She is on holiday in the first two weeks of August.

项目 alpha 的预发布环境是 staging.alpha.internal，
每周一上午会重置数据。
`

const mdDaily = `# 2026-12-03

### 14:02

- Talked about the roadmap for Q1.
- Alice wants the export feature before the billing rewrite.

### 16:45

- 讨论了发布流程：先发布到预发布环境。
`

const mdClaude = "# CLAUDE.md\n\nProject conventions for the agent.\n\n## Build\n\n" +
	"- Run the tests before every commit:\n\n  ```bash\n  go test -race ./...\n\n  # not a heading\n  ```\n\n" +
	"- Lint with `golangci-lint run`.\n  - Fix every warning.\n  - Never add `//nolint` without a reason.\n\n" +
	"## Style\n\n1. Comments say why, not what.\n2. Errors are wrapped with context.\n\n" +
	"> Keep this file short: it is loaded\n> into every session.\n\n" +
	"| Tool | Version |\n|------|---------|\n| Go   | 1.26    |\n\n" +
	"<!-- maintained by the platform team -->\n"

// entryString shows an entry as the tests compare it.
func mdEntryString(e Entry) string {
	return fmt.Sprintf("%d %s L%d %q", e.Kind, strings.Join(e.Heading, " > "), e.Line, e.Text)
}

func mdEntryStrings(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, mdEntryString(e))
	}
	return out
}

func mdEnt(kind BlockKind, heading string, line int, text string) string {
	return mdEntryString(Entry{Kind: kind, Heading: strings.Split(heading, " > "), Line: line, Text: text})
}

// checkEntries checks what every Parse result must hold: spans in order,
// Text at Start, only a newline between Text and End, Line right.
func mdCheckEntries(t testing.TB, content []byte, es []Entry) {
	t.Helper()
	prev, line, counted := 0, 1, 0
	for _, e := range es {
		if e.Start < prev || e.Start+len(e.Text) > e.End || e.End > len(content) {
			t.Fatalf("entry %s spans [%d,%d) after %d in %d bytes", mdEntryString(e), e.Start, e.End, prev, len(content))
		}
		if string(content[e.Start:e.Start+len(e.Text)]) != e.Text {
			t.Fatalf("entry %s: Text is not the content at Start", mdEntryString(e))
		}
		if rest := string(content[e.Start+len(e.Text) : e.End]); rest != "" && rest != "\n" && rest != "\r\n" {
			t.Fatalf("entry %s: %q between Text and End", mdEntryString(e), rest)
		}
		if e.Text == "" || strings.HasSuffix(e.Text, "\n") {
			t.Fatalf("entry %s: empty or ends with a newline", mdEntryString(e))
		}
		line += strings.Count(string(content[counted:e.Start]), "\n")
		counted = e.Start
		if e.Line != line {
			t.Fatalf("entry %s: line %d, want %d", mdEntryString(e), e.Line, line)
		}
		prev = e.End
	}
}

func TestParse(t *testing.T) {
	const top = ""
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"OpenClaw MEMORY.md", mdMemory, []string{
			mdEnt(ItemBlock, "MEMORY.md > Preferences", 5, "- Alice prefers short answers."),
			mdEnt(ItemBlock, "MEMORY.md > Preferences", 6, "- Replies in English unless asked otherwise; long explanations are\n  welcome when she asks \"why\"."),
			mdEnt(ItemBlock, "MEMORY.md > Preferences", 8, "- 技术术语使用简体中文，\n  代码注释保持英文。"),
			mdEnt(ItemBlock, "MEMORY.md > Rules", 13, "- Never push to main without a review."),
			mdEnt(ItemBlock, "MEMORY.md > Rules", 14, "- Deploys to production need Bob's approval."),
			mdEnt(ParagraphBlock, "MEMORY.md > Notes", 18, "Alice works from Berlin and is usually online between 9:00 and 18:00\nCET. She is on holiday in the first two weeks of August."),
			mdEnt(ParagraphBlock, "MEMORY.md > Notes", 21, "项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。"),
		}},
		{"daily log with ### headings", mdDaily, []string{
			mdEnt(ItemBlock, "2026-12-03 > 14:02", 5, "- Talked about the roadmap for Q1."),
			mdEnt(ItemBlock, "2026-12-03 > 14:02", 6, "- Alice wants the export feature before the billing rewrite."),
			mdEnt(ItemBlock, "2026-12-03 > 16:45", 10, "- 讨论了发布流程：先发布到预发布环境。"),
		}},
		{"CLAUDE.md: code in items, nested items, ordered list, quote, table, comment", mdClaude, []string{
			mdEnt(ParagraphBlock, "CLAUDE.md", 3, "Project conventions for the agent."),
			mdEnt(ItemBlock, "CLAUDE.md > Build", 7, "- Run the tests before every commit:\n\n  ```bash\n  go test -race ./...\n\n  # not a heading\n  ```"),
			mdEnt(ItemBlock, "CLAUDE.md > Build", 15, "- Lint with `golangci-lint run`."),
			mdEnt(ItemBlock, "CLAUDE.md > Build", 16, "  - Fix every warning."),
			mdEnt(ItemBlock, "CLAUDE.md > Build", 17, "  - Never add `//nolint` without a reason."),
			mdEnt(ItemBlock, "CLAUDE.md > Style", 21, "1. Comments say why, not what."),
			mdEnt(ItemBlock, "CLAUDE.md > Style", 22, "2. Errors are wrapped with context."),
			mdEnt(QuoteBlock, "CLAUDE.md > Style", 24, "> Keep this file short: it is loaded\n> into every session."),
			mdEnt(TableBlock, "CLAUDE.md > Style", 27, "| Tool | Version |\n|------|---------|\n| Go   | 1.26    |"),
			mdEnt(CommentBlock, "CLAUDE.md > Style", 31, "<!-- maintained by the platform team -->"),
		}},
		{"a block open to the end stops at its last line that is not blank", "```\ncode\n\n  \n", []string{
			mdEnt(CodeBlock, top, 1, "```\ncode"),
		}},
		{"fenced code kept whole, ~~~ too, unclosed to the end",
			"```go\n- not an item\n\n## not a heading\n```\n~~~\nx\n~~~\n\n````\nopen\n```\nstill open",
			[]string{
				mdEnt(CodeBlock, top, 1, "```go\n- not an item\n\n## not a heading\n```"),
				mdEnt(CodeBlock, top, 6, "~~~\nx\n~~~"),
				mdEnt(CodeBlock, top, 10, "````\nopen\n```\nstill open"),
			}},
		{"front matter is an entry", "---\nname: memory\ntags: [a, b]\n---\n\n- a\n", []string{
			mdEnt(FrontMatterBlock, top, 1, "---\nname: memory\ntags: [a, b]\n---"),
			mdEnt(ItemBlock, top, 6, "- a"),
		}},
		{"--- without an end is a thematic break", "---\n- a\n\n***\n\n- b\n", []string{
			mdEnt(ItemBlock, top, 2, "- a"),
			mdEnt(ItemBlock, top, 6, "- b"),
		}},
		{"comments: one line, several lines, unclosed", "<!-- one -->\n- a\n<!--\ntwo\n-->\nb\n\n<!-- three\n- hidden\n", []string{
			mdEnt(CommentBlock, top, 1, "<!-- one -->"),
			mdEnt(ItemBlock, top, 2, "- a"),
			mdEnt(CommentBlock, top, 3, "<!--\ntwo\n-->"),
			mdEnt(ParagraphBlock, top, 6, "b"),
			mdEnt(CommentBlock, top, 8, "<!-- three\n- hidden"),
		}},
		{"setext headings", "Title\n=====\n\nSection\n-------\ntext\n", []string{
			mdEnt(ParagraphBlock, "Title > Section", 6, "text"),
		}},
		{"ATX heading details", "#not a heading\n#\n## Rules ##\n- a\n### C# tips\n- b\n    # indented: text\n", []string{
			mdEnt(ParagraphBlock, top, 1, "#not a heading"),
			mdEnt(ItemBlock, " > Rules", 4, "- a"),
			mdEnt(ItemBlock, " > Rules > C# tips", 6, "- b\n    # indented: text"),
		}},
		{"lazy continuation, and items interrupt a paragraph", "- a\nlazy line\nText:\n- b\n* c\n+ d\n3) e\n", []string{
			mdEnt(ItemBlock, top, 1, "- a\nlazy line\nText:"),
			mdEnt(ItemBlock, top, 4, "- b"),
			mdEnt(ItemBlock, top, 5, "* c"),
			mdEnt(ItemBlock, top, 6, "+ d"),
			mdEnt(ItemBlock, top, 7, "3) e"),
		}},
		{"paragraph then list without a blank line", "Preferences of Alice:\n- short answers\n", []string{
			mdEnt(ParagraphBlock, top, 1, "Preferences of Alice:"),
			mdEnt(ItemBlock, top, 2, "- short answers"),
		}},
		{"an item goes on after a blank line only when indented", "- a\n\n  more of a\n\nnot a\n\n- b\n\n- c\n", []string{
			mdEnt(ItemBlock, top, 1, "- a\n\n  more of a"),
			mdEnt(ParagraphBlock, top, 5, "not a"),
			mdEnt(ItemBlock, top, 7, "- b"),
			mdEnt(ItemBlock, top, 9, "- c"),
		}},
		{"nested items end their parent", "- parent\n  - child\n    - grandchild\n  back in child\n\n  after a blank: its own paragraph\n", []string{
			mdEnt(ItemBlock, top, 1, "- parent"),
			mdEnt(ItemBlock, top, 2, "  - child"),
			mdEnt(ItemBlock, top, 3, "    - grandchild\n  back in child"),
			mdEnt(ParagraphBlock, top, 6, "  after a blank: its own paragraph"),
		}},
		{"task items, empty item, tab indent", "- [ ] todo\n- [x] done\n-\n\tindented by a tab\n", []string{
			mdEnt(ItemBlock, top, 1, "- [ ] todo"),
			mdEnt(ItemBlock, top, 2, "- [x] done"),
			mdEnt(ItemBlock, top, 3, "-\n\tindented by a tab"),
		}},
		{"not list items", "-no space\n1.no space\n1234567890. too long\n", []string{
			mdEnt(ParagraphBlock, top, 1, "-no space\n1.no space\n1234567890. too long"),
		}},
		{"quotes: lazy lines, a blank line ends one", "> a\nlazy\n> b\n\n> c\n", []string{
			mdEnt(QuoteBlock, top, 1, "> a\nlazy\n> b"),
			mdEnt(QuoteBlock, top, 5, "> c"),
		}},
		{"a table needs a delimiter row with as many cells", "| a | b |\n|---|:-:|\n| 1 | 2 |\n\na | b\n--|--\n\n| a | b |\n|---|\n", []string{
			mdEnt(TableBlock, top, 1, "| a | b |\n|---|:-:|\n| 1 | 2 |"),
			mdEnt(TableBlock, top, 5, "a | b\n--|--"),
			mdEnt(ParagraphBlock, top, 8, "| a | b |\n|---|"),
		}},
		{"CRLF", "## A\r\n\r\n- a\r\n  b\r\n- c\r\n\r\npara\r\n", []string{
			mdEnt(ItemBlock, "A", 3, "- a\r\n  b"),
			mdEnt(ItemBlock, "A", 5, "- c"),
			mdEnt(ParagraphBlock, "A", 7, "para"),
		}},
		{"no trailing newline", "- a\n- b", []string{
			mdEnt(ItemBlock, top, 1, "- a"),
			mdEnt(ItemBlock, top, 2, "- b"),
		}},
		{"byte order mark", "\ufeff# T\n- a\n", []string{mdEnt(ItemBlock, "T", 2, "- a")}},
		{"byte order mark before an entry", "\ufeff- a\n", []string{mdEnt(ItemBlock, top, 1, "- a")}},
		{"invalid UTF-8", "- \xff\xfe\n\xc3\n", []string{mdEnt(ItemBlock, top, 1, "- \xff\xfe\n\xc3")}},
		{"empty", "", nil},
		{"only headings and blank lines", "# A\n\n## B\n\n\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse([]byte(tc.content))
			mdCheckEntries(t, []byte(tc.content), got)
			if gs := mdEntryStrings(got); !slices.Equal(gs, tc.want) {
				t.Fatalf("Parse:\n%s\nwant:\n%s", strings.Join(gs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestParseOffsets(t *testing.T) {
	content := []byte("\ufeff# A\r\n\r\n- a\r\n- b")
	es := Parse(content)
	mdCheckEntries(t, content, es)
	if len(es) != 2 || es[0].Start != 10 || es[0].End != 15 || es[1].Start != 15 || es[1].End != 18 {
		t.Fatalf("offsets: %+v", es)
	}
	// Entries of a section share their heading path; an append by a
	// caller must not write into it.
	es = Parse([]byte("# A\n- a\n- b\n"))
	h := append(es[0].Heading, "x")
	h[0] = "changed"
	if es[1].Heading[0] != "A" || len(es[1].Heading) != 1 {
		t.Fatalf("heading path shared: %q", es[1].Heading)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"item", "- Alice prefers short answers.", "Alice prefers short answers."},
		{"wrapped item", "- Replies in English unless asked otherwise;\n  long   explanations are welcome.", "Replies in English unless asked otherwise; long explanations are welcome."},
		{"star and plus", "* a\n+ b", "a"},
		{"ordered", "12. twelfth", "twelfth"},
		{"ordered with )", "3) third", "third"},
		{"task", "- [ ] buy milk", "buy milk"},
		{"done task", "- [x] bought milk", "bought milk"},
		{"not a task box", "- [link](x) here", "[link](x) here"},
		{"nested item", "    - deep", "deep"},
		{"Chinese lines join without a space", "- 技术术语使用简体中文，\n  代码注释保持英文。", "技术术语使用简体中文，代码注释保持英文。"},
		{"Chinese then English", "- 预发布环境是\n  staging.alpha.internal", "预发布环境是 staging.alpha.internal"},
		{"paragraph", "Alice works from Berlin\nand is online 9-18.", "Alice works from Berlin and is online 9-18."},
		{"CRLF", "- a\r\n  b", "a b"},
		{"quote", "> Keep it short:\n> it is loaded\nlazy", "Keep it short: it is loaded lazy"},
		{"comment", "<!-- maintained by\n  the platform team -->", "maintained by the platform team"},
		{"code keeps its lines", "```bash\r\ngo test ./...  \r\n```", "```bash\ngo test ./...\n```"},
		{"table keeps its rows", "| a | b |\n|---|---|", "| a | b |\n|---|---|"},
		{"empty item", "-", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := Parse([]byte(tc.content))
			if len(es) == 0 {
				t.Fatalf("no entry in %q", tc.content)
			}
			if got := es[0].Summary(); got != tc.want {
				t.Fatalf("Summary() = %q, want %q", got, tc.want)
			}
		})
	}
	// An entry built by hand (no Kind) is read as an item or a paragraph.
	if got := (Entry{Text: "- by hand\n  wrapped"}).Summary(); got != "by hand wrapped" {
		t.Fatalf("hand-built entry: %q", got)
	}
}

// changeString shows a change as the tests compare it.
func mdChangeString(c Change) string {
	switch c.Kind {
	case Added:
		return "+ " + c.New.Text
	case Removed:
		return "- " + c.Old.Text
	case Changed:
		return "~ " + c.Old.Text + " => " + c.New.Text
	}
	return "?"
}

func mdChangeStrings(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, mdChangeString(c))
	}
	return out
}

func mdDiffStrings(old, new string) []string {
	return mdChangeStrings(Diff(Parse([]byte(old)), Parse([]byte(new))).Changes)
}

// edit returns s with each old replaced by the new after it, once.
func mdEditText(s string, pairs ...string) string {
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			panic("edit: no " + pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

const (
	mdAlice    = "- Alice prefers short answers.\n"
	mdEnglish  = "- Replies in English unless asked otherwise; long explanations are\n  welcome when she asks \"why\".\n"
	mdChinese  = "- 技术术语使用简体中文，\n  代码注释保持英文。\n"
	mdReview   = "- Never push to main without a review.\n"
	mdBob      = "- Deploys to production need Bob's approval.\n"
	mdBerlin   = "Alice works from Berlin and is usually online between 9:00 and 18:00\nCET. She is on holiday in the first two weeks of August.\n"
	mdAutoPub  = "- Auto-publish to production is always allowed.\n"
	mdDarkMode = "- Alice likes the dark theme in every editor.\n"
)

// The edits of the Diff and Undo tests: each is the old file, the new
// one, the changes Diff finds and, for Undo, which changes are undone
// (by their changeString) and the file after.
var mdEdits = []struct {
	name     string
	old, new string
	changes  []string
	undo     []string // nil: all
	undone   string   // "": the old file
}{
	{name: "no change", old: mdMemory, new: mdMemory},
	{name: "one item edited", old: mdMemory, new: mdEditText(mdMemory, "short answers.", "short answers with examples."),
		changes: []string{"~ - Alice prefers short answers. => - Alice prefers short answers with examples."}},
	{name: "one item edited beyond recognition, between kept items", old: mdMemory,
		new:     mdEditText(mdMemory, mdEnglish, "- Speaks Dutch at home.\n"),
		changes: []string{"~ " + strings.TrimSuffix(mdEnglish, "\n") + " => - Speaks Dutch at home."}},
	{name: "a Chinese item edited", old: mdMemory, new: mdEditText(mdMemory, "代码注释保持英文。", "代码注释和提交信息保持英文。"),
		changes: []string{"~ - 技术术语使用简体中文，\n  代码注释保持英文。 => - 技术术语使用简体中文，\n  代码注释和提交信息保持英文。"}},
	{name: "a paragraph edited", old: mdMemory, new: mdEditText(mdMemory, "first two weeks of August", "last week of July"),
		changes: []string{"~ " + strings.TrimSuffix(mdBerlin, "\n") + " => " + strings.TrimSuffix(mdEditText(mdBerlin, "first two weeks of August", "last week of July"), "\n")}},
	{name: "one added at the end of a list", old: mdMemory, new: mdEditText(mdMemory, mdBob, mdBob+mdAutoPub),
		changes: []string{"+ - Auto-publish to production is always allowed."}},
	{name: "one added in the middle of a list", old: mdMemory, new: mdEditText(mdMemory, mdAlice, mdAlice+mdDarkMode),
		changes: []string{"+ - Alice likes the dark theme in every editor."}},
	{name: "one added at the start of a section", old: mdMemory, new: mdEditText(mdMemory, "## Rules\n\n", "## Rules\n\n"+mdAutoPub),
		changes: []string{"+ - Auto-publish to production is always allowed."}},
	{name: "a paragraph added between paragraphs", old: mdMemory,
		new:     mdEditText(mdMemory, mdBerlin+"\n", mdBerlin+"\nBob is the release manager.\n\n"),
		changes: []string{"+ Bob is the release manager."}},
	{name: "a paragraph added at the end of the file", old: mdMemory, new: mdMemory + "\nBob is the release manager.\n",
		changes: []string{"+ Bob is the release manager."}},
	{name: "a new section added", old: mdMemory, new: mdMemory + "\n## Deploys\n\n" + mdAutoPub,
		changes: []string{"+ - Auto-publish to production is always allowed."},
		undone:  mdMemory + "\n## Deploys\n"}, // the heading is not an entry: it stays
	{name: "one removed", old: mdMemory, new: mdEditText(mdMemory, mdReview, ""),
		changes: []string{"- - Never push to main without a review."}},
	{name: "the last of a list removed", old: mdMemory, new: mdEditText(mdMemory, mdBob, ""),
		changes: []string{"- - Deploys to production need Bob's approval."}},
	{name: "a paragraph removed", old: mdMemory, new: mdEditText(mdMemory, mdBerlin+"\n", ""),
		changes: []string{"- " + strings.TrimSuffix(mdBerlin, "\n")}},
	{name: "a whole section emptied", old: mdMemory, new: mdEditText(mdMemory, mdReview+mdBob, ""),
		changes: []string{"- - Never push to main without a review.", "- - Deploys to production need Bob's approval."}},
	{name: "items reordered", old: mdMemory, new: mdEditText(mdMemory, mdAlice+mdEnglish, mdEnglish+mdAlice),
		undone: mdEditText(mdMemory, mdAlice+mdEnglish, mdEnglish+mdAlice)},
	{name: "an item moved to another section", old: mdMemory, new: mdEditText(mdMemory, mdAlice, "", mdBob, mdBob+mdAlice),
		undone: mdEditText(mdMemory, mdAlice, "", mdBob, mdBob+mdAlice)},
	{name: "a heading renamed", old: mdMemory, new: mdEditText(mdMemory, "## Rules", "## House rules"),
		undone: mdEditText(mdMemory, "## Rules", "## House rules")},
	{name: "the whole file replaced with unrelated content", old: mdMemory, new: "# MEMORY.md\n\nNothing to remember.\n",
		changes: []string{"- " + strings.TrimSuffix(mdAlice, "\n"), "- " + strings.TrimSuffix(mdEnglish, "\n"), "- " + strings.TrimSuffix(mdChinese, "\n"),
			"- " + strings.TrimSuffix(mdReview, "\n"), "- " + strings.TrimSuffix(mdBob, "\n"), "- " + strings.TrimSuffix(mdBerlin, "\n"),
			"- 项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。", "+ Nothing to remember."},
		// The headings went with the overwrite, and they are not entries:
		// the entries come back at the end of the file, as they were
		// separated.
		undone: "# MEMORY.md\n\n" + mdAlice + mdEnglish + mdChinese + "\n" + mdReview + mdBob + "\n" + mdBerlin + "\n项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。\n"},
	{name: "the file emptied", old: mdDaily, new: "",
		changes: []string{"- - Talked about the roadmap for Q1.", "- - Alice wants the export feature before the billing rewrite.", "- - 讨论了发布流程：先发布到预发布环境。"},
		undone:  "- Talked about the roadmap for Q1.\n- Alice wants the export feature before the billing rewrite.\n\n- 讨论了发布流程：先发布到预发布环境。\n"},
	{name: "a new file", old: "", new: mdDaily,
		changes: []string{"+ - Talked about the roadmap for Q1.", "+ - Alice wants the export feature before the billing rewrite.", "+ - 讨论了发布流程：先发布到预发布环境。"},
		undone:  "# 2026-12-03\n\n### 14:02\n\n### 16:45\n"}, // headings are not entries
	{name: "a duplicate removed", old: "- a\n- b\n- a\n- c\n", new: "- a\n- b\n- c\n", changes: []string{"- - a"}},
	{name: "a duplicate added", old: "- a\n- b\n", new: "- a\n- b\n- a\n", changes: []string{"+ - a"}},
	{name: "an item edited into a duplicate of its neighbour", old: "## A\n\n- x\n- a\n- b\n", new: "## A\n\n- x\n- b\n- b\n",
		changes: []string{"~ - a => - b"}},
	{name: "a daily log entry added under a new time", old: mdDaily, new: mdDaily + "\n### 18:30\n\n- 把发布清单发给了 Bob。\n",
		changes: []string{"+ - 把发布清单发给了 Bob。"}, undone: mdDaily + "\n### 18:30\n"},
	{name: "a code block edited in an item", old: mdClaude, new: mdEditText(mdClaude, "go test -race ./...", "go test -race -count=1 ./..."),
		changes: []string{"~ - Run the tests before every commit:\n\n  ```bash\n  go test -race ./...\n\n  # not a heading\n  ``` => - Run the tests before every commit:\n\n  ```bash\n  go test -race -count=1 ./...\n\n  # not a heading\n  ```"}},
	{name: "a nested item added", old: mdClaude, new: mdEditText(mdClaude, "  - Fix every warning.\n", "  - Fix every warning.\n  - Keep the linter config in the repo.\n"),
		changes: []string{"+   - Keep the linter config in the repo."}},
	{name: "a CRLF file", old: strings.ReplaceAll(mdDaily, "\n", "\r\n"), new: strings.ReplaceAll(mdDaily+"- Bob joined.\n", "\n", "\r\n"),
		changes: []string{"+ - Bob joined."}},
	{name: "no trailing newline", old: "- a\n- b", new: "- a\n- b\n- c", changes: []string{"+ - c"}},

	// Several changes at once; only some are undone.
	{name: "edit A kept, item B added and undone", old: mdMemory,
		new:     mdEditText(mdMemory, "short answers.", "short answers with examples.", mdBob, mdBob+mdAutoPub),
		changes: []string{"~ - Alice prefers short answers. => - Alice prefers short answers with examples.", "+ - Auto-publish to production is always allowed."},
		undo:    []string{"+ - Auto-publish to production is always allowed."},
		undone:  mdEditText(mdMemory, "short answers.", "short answers with examples.")},
	{name: "edit A undone, item B added and kept", old: mdMemory,
		new:     mdEditText(mdMemory, "short answers.", "short answers with examples.", mdBob, mdBob+mdAutoPub),
		changes: []string{"~ - Alice prefers short answers. => - Alice prefers short answers with examples.", "+ - Auto-publish to production is always allowed."},
		undo:    []string{"~ - Alice prefers short answers. => - Alice prefers short answers with examples."},
		undone:  mdEditText(mdMemory, mdBob, mdBob+mdAutoPub)},
	{name: "two items added next to each other, the second undone", old: mdMemory,
		new:     mdEditText(mdMemory, mdBob, mdBob+mdDarkMode+mdAutoPub),
		changes: []string{"+ - Alice likes the dark theme in every editor.", "+ - Auto-publish to production is always allowed."},
		undo:    []string{"+ - Auto-publish to production is always allowed."},
		undone:  mdEditText(mdMemory, mdBob, mdBob+mdDarkMode)},
	{name: "two items added next to each other, the first undone", old: mdMemory,
		new:     mdEditText(mdMemory, mdBob, mdBob+mdAutoPub+mdDarkMode),
		changes: []string{"+ - Auto-publish to production is always allowed.", "+ - Alice likes the dark theme in every editor."},
		undo:    []string{"+ - Auto-publish to production is always allowed."},
		undone:  mdEditText(mdMemory, mdBob, mdBob+mdDarkMode)},
	{name: "a rule removed (undone) while a preference is edited (kept)", old: mdMemory,
		new:     mdEditText(mdMemory, "short answers.", "short answers with examples.", mdReview, ""),
		changes: []string{"~ - Alice prefers short answers. => - Alice prefers short answers with examples.", "- - Never push to main without a review."},
		undo:    []string{"- - Never push to main without a review."},
		undone:  mdEditText(mdMemory, "short answers.", "short answers with examples.")},
	{name: "two rules removed, only the second put back", old: mdMemory,
		new:     mdEditText(mdMemory, mdReview+mdBob, ""),
		changes: []string{"- - Never push to main without a review.", "- - Deploys to production need Bob's approval."},
		undo:    []string{"- - Deploys to production need Bob's approval."},
		undone:  mdEditText(mdMemory, mdReview, "")},
	{name: "two paragraphs added, the last undone", old: mdMemory,
		new:     mdMemory + "\nBob is the release manager.\n\nReleases are on Tuesdays.\n",
		changes: []string{"+ Bob is the release manager.", "+ Releases are on Tuesdays."},
		undo:    []string{"+ Releases are on Tuesdays."},
		undone:  mdMemory + "\nBob is the release manager.\n"},
	{name: "two paragraphs added, the first undone", old: mdMemory,
		new:     mdEditText(mdMemory, mdBerlin+"\n", mdBerlin+"\nBob is the release manager.\n\nReleases are on Tuesdays.\n\n"),
		changes: []string{"+ Bob is the release manager.", "+ Releases are on Tuesdays."},
		undo:    []string{"+ Bob is the release manager."},
		undone:  mdEditText(mdMemory, mdBerlin+"\n", mdBerlin+"\nReleases are on Tuesdays.\n\n")},
	{name: "a paragraph undone, an item in another section kept", old: mdMemory,
		new:     mdEditText(mdMemory, mdAlice, mdAlice+mdDarkMode) + "\nAuto-publish is always allowed.\n",
		changes: []string{"+ - Alice likes the dark theme in every editor.", "+ Auto-publish is always allowed."},
		undo:    []string{"+ Auto-publish is always allowed."},
		undone:  mdEditText(mdMemory, mdAlice, mdAlice+mdDarkMode)},
	{name: "whole file replaced, only the rules put back", old: mdMemory, new: "# MEMORY.md\n\n## Rules\n\nNothing to remember.\n",
		changes: []string{"- " + strings.TrimSuffix(mdAlice, "\n"), "- " + strings.TrimSuffix(mdEnglish, "\n"), "- " + strings.TrimSuffix(mdChinese, "\n"),
			"- " + strings.TrimSuffix(mdReview, "\n"), "- " + strings.TrimSuffix(mdBob, "\n"),
			"- " + strings.TrimSuffix(mdBerlin, "\n"), "- 项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。", "+ Nothing to remember."},
		undo:   []string{"- " + strings.TrimSuffix(mdReview, "\n"), "- " + strings.TrimSuffix(mdBob, "\n")},
		undone: "# MEMORY.md\n\n## Rules\n\nNothing to remember.\n\n" + mdReview + mdBob},
	{name: "a removed item whose neighbours are gone goes to the end of its section", old: "## A\n\n- a\n- b\n- c\n\n## B\n\n- d\n",
		new:     "## A\n\n- x\n\n## B\n\n- d\n",
		changes: []string{"- - a", "- - b", "- - c", "+ - x"},
		undo:    []string{"- - b"},
		undone:  "## A\n\n- x\n- b\n\n## B\n\n- d\n"},
	{name: "a removed item whose section is gone goes to the end of the file", old: "## A\n\n- a\n\n## B\n\n- d\n",
		new:     "## B\n\n- d\n",
		changes: []string{"- - a"},
		undone:  "## B\n\n- d\n- a\n"},
	{name: "CRLF, one of two changes undone", old: "## A\r\n\r\n- a\r\n- b\r\n",
		new:     "## A\r\n\r\n- a2\r\n- b\r\n- c\r\n",
		changes: []string{"~ - a => - a2", "+ - c"},
		undo:    []string{"+ - c"},
		undone:  "## A\r\n\r\n- a2\r\n- b\r\n"},
}

func TestDiff(t *testing.T) {
	for _, tc := range mdEdits {
		t.Run(tc.name, func(t *testing.T) {
			if got := mdDiffStrings(tc.old, tc.new); !slices.Equal(got, tc.changes) {
				t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.changes, "\n"))
			}
		})
	}
}

// TestDiffRelated: entries related as one fact pair as Changed although
// their words differ too much for the word similarity; without the
// relation they are a removal and an addition.
func TestDiffRelated(t *testing.T) {
	old := Parse([]byte("# M\n\n- The user lives in Paris.\n- Alice has two cats.\n"))
	new := Parse([]byte("# M\n\n- The user moved to Berlin last spring.\n- Bob likes jazz.\n- Alice has two cats.\n"))
	related := func(o, n string) bool { return strings.Contains(o, "lives in") && strings.Contains(n, "moved to") }
	for _, tc := range []struct {
		name    string
		related func(string, string) bool
		want    []ChangeKind
	}{
		{"unrelated", nil, []ChangeKind{Removed, Added, Added}},
		{"related", related, []ChangeKind{Changed, Added}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ChangeKind
			for _, c := range DiffRelated(old, new, tc.related).Changes {
				got = append(got, c.Kind)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("kinds %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDiffEntries(t *testing.T) {
	// Old and New point at the entries of each version.
	old, new := Parse([]byte(mdMemory)), Parse([]byte(mdEditText(mdMemory, mdAlice, mdAlice+mdDarkMode, "short answers.", "short answers, always.")))
	cs := Diff(old, new).Changes
	if len(cs) != 2 || cs[0].Kind != Changed || cs[0].Old != &old[0] || cs[0].New != &new[0] ||
		cs[1].Kind != Added || cs[1].Old != nil || cs[1].New != &new[1] || cs[1].New.Line != 6 {
		t.Fatalf("changes: %q", mdChangeStrings(cs))
	}
}

func TestUndo(t *testing.T) {
	for _, tc := range mdEdits {
		t.Run(tc.name, func(t *testing.T) {
			now := Parse([]byte(tc.new))
			undo := Diff(Parse([]byte(tc.old)), now).Select(func(_ int, c Change) bool {
				return tc.undo == nil || slices.Contains(tc.undo, mdChangeString(c))
			})
			if tc.undo != nil && len(undo.Changes) != len(tc.undo) {
				t.Fatalf("undo %q: not all among the changes", tc.undo)
			}
			want := tc.undone
			if want == "" {
				want = tc.old
			}
			if got := string(Undo([]byte(tc.new), now, undo)); got != want {
				t.Fatalf("Undo:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// Each edit above again, now with an unrelated edit the agent made at the
// same time: undoing the edit's changes keeps the other one, byte for
// byte.
func TestUndoKeepsAConcurrentEdit(t *testing.T) {
	const notes = "项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。"
	concurrent := []struct {
		name, from, to, keep string
	}{
		{"a Chinese paragraph edited", notes, strings.Replace(notes, "每周一", "每周二", 1),
			"~ " + notes + " => " + strings.Replace(notes, "每周一", "每周二", 1)},
		{"a preference added", mdChinese, mdChinese + "- 周报用中文写。\n", "+ - 周报用中文写。"},
	}
	tried := 0
	for _, tc := range mdEdits {
		for _, cc := range concurrent {
			want := tc.undone
			if want == "" {
				want = tc.old
			}
			// Only where the other edit is elsewhere: both files have its
			// text once, and the edit's changes do not touch it.
			if strings.Count(tc.new, cc.from) != 1 || strings.Count(want, cc.from) != 1 ||
				slices.ContainsFunc(tc.changes, func(c string) bool { return strings.Contains(c, strings.TrimSuffix(cc.from, "\n")) }) {
				continue
			}
			tried++
			t.Run(tc.name+", "+cc.name, func(t *testing.T) {
				new := strings.Replace(tc.new, cc.from, cc.to, 1)
				want = strings.Replace(want, cc.from, cc.to, 1)
				now := Parse([]byte(new))
				undo := Diff(Parse([]byte(tc.old)), now).Select(func(_ int, c Change) bool {
					s := mdChangeString(c)
					return s != cc.keep && (tc.undo == nil || slices.Contains(tc.undo, s))
				})
				if got := string(Undo([]byte(new), now, undo)); got != want {
					t.Fatalf("undoing %q\nof\n%s\ngives\n%s\nwant\n%s", mdChangeStrings(undo.Changes), new, got, want)
				}
			})
		}
	}
	if tried < 40 {
		t.Fatalf("only %d combinations apply", tried)
	}
}

// Changes built by hand (as when a file is adopted: every entry Added)
// have no old file to go by; the placement rules alone apply.
func TestUndoHandBuiltChanges(t *testing.T) {
	content := []byte(mdMemory + "\n## Secrets\n\n- The deploy token is ghp_123.\n")
	now := Parse(content)
	secret := &now[len(now)-1]
	if got := string(Undo(content, now, Plan{Changes: []Change{{Kind: Added, New: secret}}})); got != mdMemory+"\n## Secrets\n" {
		t.Fatalf("Added undone:\n%s", got)
	}
	// A paragraph in the middle goes with one of its blank lines.
	if got := string(Undo(content, now, Plan{Changes: []Change{{Kind: Added, New: &now[5]}}})); got != mdEditText(string(content), mdBerlin+"\n", "") {
		t.Fatalf("paragraph undone:\n%s", got)
	}
	// Removed, no hint: at the end of its section.
	old := Parse([]byte(mdMemory))
	now = Parse([]byte(mdEditText(mdMemory, mdReview, "")))
	got := string(Undo([]byte(mdEditText(mdMemory, mdReview, "")), now, Plan{Changes: []Change{{Kind: Removed, Old: &old[3]}}}))
	if want := mdEditText(mdMemory, mdReview+mdBob, mdBob+mdReview); got != want {
		t.Fatalf("Removed undone:\n%s\nwant:\n%s", got, want)
	}
	// Changes whose entry is not in the file, or incomplete ones, are skipped.
	gone := Entry{Text: "- not there", Start: 3}
	for _, c := range []Change{{Kind: Added, New: &gone}, {Kind: Changed, Old: &old[0], New: &gone}, {Kind: Removed}, {Kind: 0}} {
		if got := Undo([]byte(mdMemory), old, Plan{Changes: []Change{c}}); string(got) != mdMemory {
			t.Fatalf("undoing %+v changed the file:\n%s", c, got)
		}
	}
}

// Undo works on a file that changed since Diff saw it (the agent wrote
// again): it finds the entries by their text.
func TestUndoAfterAnotherEdit(t *testing.T) {
	oldE := Parse([]byte(mdMemory))
	next := mdEditText(mdMemory, mdBob, mdBob+mdAutoPub)
	cs := Diff(oldE, Parse([]byte(next)))
	later := "Alice moved to Munich.\n\n" + next
	got := string(Undo([]byte(later), Parse([]byte(later)), cs))
	if want := "Alice moved to Munich.\n\n" + mdMemory; got != want {
		t.Fatalf("Undo:\n%s\nwant:\n%s", got, want)
	}
}

func TestInsert(t *testing.T) {
	tests := []struct {
		name, content string
		heading       []string
		after, text   string
		want          string
	}{
		{"after an item in a list", mdMemory, nil, strings.TrimSuffix(mdAlice, "\n"), "- Dark theme.",
			mdEditText(mdMemory, mdAlice, mdAlice+"- Dark theme.\n")},
		{"after the last item of a section", mdMemory, nil, strings.TrimSuffix(mdBob, "\n"), "- Dark theme.",
			mdEditText(mdMemory, mdBob, mdBob+"- Dark theme.\n")},
		{"a paragraph after an item", mdMemory, nil, strings.TrimSuffix(mdBob, "\n"), "Some text.",
			mdEditText(mdMemory, mdBob, mdBob+"\nSome text.\n")},
		{"a paragraph after a paragraph", mdMemory, nil, strings.TrimSuffix(mdBerlin, "\n"), "Some text.",
			mdEditText(mdMemory, mdBerlin, mdBerlin+"\nSome text.\n")},
		{"an item after the last paragraph, at the end of the file", mdMemory, nil, "项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。", "- x",
			mdMemory + "\n- x\n"},
		{"at the start of a section", mdMemory, []string{"MEMORY.md", "Rules"}, "", "- First rule.",
			mdEditText(mdMemory, mdReview, "- First rule.\n"+mdReview)},
		{"a paragraph at the start of a list section", mdMemory, []string{"MEMORY.md", "Rules"}, "", "Intro.",
			mdEditText(mdMemory, mdReview, "Intro.\n\n"+mdReview)},
		{"after text that is gone: at the end of the section", mdMemory, []string{"MEMORY.md", "Rules"}, "- gone", "- New rule.",
			mdEditText(mdMemory, mdBob, mdBob+"- New rule.\n")},
		{"into an empty section", "# M\n\n## Empty\n\n## Next\n\n- a\n", []string{"M", "Empty"}, "", "- x",
			"# M\n\n## Empty\n\n- x\n\n## Next\n\n- a\n"},
		{"into an empty section at the end of the file", "# M\n\n## Empty\n", []string{"M", "Empty"}, "- gone", "- x",
			"# M\n\n## Empty\n\n- x\n"},
		{"into an empty section without a trailing newline", "# M\n\n## Empty", []string{"M", "Empty"}, "", "- x",
			"# M\n\n## Empty\n\n- x"},
		{"a section's own text ends at its first subheading", "# M\n\n- top\n\n## Sub\n\n- sub\n", []string{"M"}, "- gone", "- x",
			"# M\n\n- top\n- x\n\n## Sub\n\n- sub\n"},
		{"a missing section: a new heading at the end of its parent", mdMemory, []string{"MEMORY.md", "Deploys"}, "", "- Bob deploys.",
			mdMemory + "\n## Deploys\n\n- Bob deploys.\n"},
		{"a missing section: its parent ends before the next top heading", "# A\n\n- a\n\n# B\n\n- b\n", []string{"A", "New"}, "", "- x",
			"# A\n\n- a\n\n## New\n\n- x\n\n# B\n\n- b\n"},
		{"a missing section: at the level of its siblings", mdDaily, []string{"2026-12-03", "18:30"}, "", "- 发了清单。",
			mdDaily + "\n### 18:30\n\n- 发了清单。\n"},
		{"a missing section whose parent is missing too", mdMemory, []string{"Other", "Deep"}, "", "- x",
			mdMemory + "\n## Deep\n\n- x\n"},
		{"the top of the file", mdMemory, nil, "", "- x",
			"- x\n\n" + mdMemory},
		{"the top of a file that starts with entries", "- a\n\n# T\n", nil, "", "- x",
			"- x\n- a\n\n# T\n"},
		{"an empty file", "", []string{"MEMORY.md", "Rules"}, "", "- x",
			"## Rules\n\n- x\n"},
		{"an empty file, no heading", "", nil, "", "- x", "- x\n"},
		{"no trailing newline stays so", "- a", nil, "- a", "- b", "- a\n- b"},
		{"CRLF", "## A\r\n\r\n- a\r\n", []string{"A"}, "- a", "- b", "## A\r\n\r\n- a\r\n- b\r\n"},
		{"empty text changes nothing", mdMemory, nil, "", "", mdMemory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Insert([]byte(tc.content), tc.heading, tc.after, tc.text)); got != tc.want {
				t.Fatalf("Insert:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestReplace(t *testing.T) {
	tests := []struct {
		name, content, old, new, want string
		ok                            bool
	}{
		{"an item", mdMemory, strings.TrimSuffix(mdAlice, "\n"), "- Alice prefers long answers.", mdEditText(mdMemory, mdAlice, "- Alice prefers long answers.\n"), true},
		{"a wrapped item by one line", mdMemory, strings.TrimSuffix(mdEnglish, "\n"), "- English.", mdEditText(mdMemory, mdEnglish, "- English.\n"), true},
		{"the first of duplicates", "- a\n- a\n", "- a", "- b", "- b\n- a\n", true},
		{"CRLF keeps its line ending", "- a\r\n- b\r\n", "- a", "- c", "- c\r\n- b\r\n", true},
		{"no trailing newline", "- a\n- b", "- b", "- c", "- a\n- c", true},
		{"not there", mdMemory, "- not there", "- x", mdMemory, false},
		{"text that is not a whole entry", mdMemory, "- Alice", "- x", mdMemory, false},
		{"empty new text removes", "- a\n- b\n", "- a", "", "- b\n", true},
		{"a paragraph in place of an item in a list is kept apart", "- a\n- b\n- c\n", "- b", "Text.", "- a\n\nText.\n- c\n", true},
		{"an item in place of a paragraph", "p\n\nq\n", "q", "- q", "p\n\n- q\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Replace([]byte(tc.content), tc.old, tc.new)
			if string(got) != tc.want || ok != tc.ok {
				t.Fatalf("Replace: %v\n%s\nwant %v:\n%s", ok, got, tc.ok, tc.want)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name, content, text, want string
		ok                        bool
	}{
		{"an item in a list", mdMemory, strings.TrimSuffix(mdEnglish, "\n"), mdEditText(mdMemory, mdEnglish, ""), true},
		{"the last item of a section", mdMemory, strings.TrimSuffix(mdBob, "\n"), mdEditText(mdMemory, mdBob, ""), true},
		{"the only item of a section", "## A\n\n- a\n\n## B\n", "- a", "## A\n\n## B\n", true},
		{"a paragraph between paragraphs", mdMemory, strings.TrimSuffix(mdBerlin, "\n"), mdEditText(mdMemory, mdBerlin+"\n", ""), true},
		{"the last paragraph of the file", mdMemory, "项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。",
			strings.TrimSuffix(mdEditText(mdMemory, "项目 alpha 的预发布环境是 staging.alpha.internal，\n每周一上午会重置数据。\n", ""), "\n"), true},
		{"the first block of the file", "Intro.\n\n# T\n", "Intro.", "# T\n", true},
		{"a paragraph right before a list", "Intro:\n- a\n", "Intro:", "- a\n", true},
		{"a fence between two lines of text keeps them apart", "- a\n```\ncode\n```\nmore\n", "```\ncode\n```", "- a\n\nmore\n", true},
		{"the first of duplicates", "- a\n- b\n- a\n", "- a", "- b\n- a\n", true},
		{"no trailing newline stays so", "- a\n- b", "- b", "- a", true},
		{"no trailing newline, a paragraph", "p\n\nq", "q", "p", true},
		{"CRLF", "p\r\n\r\nq\r\n\r\nr\r\n", "q", "p\r\n\r\nr\r\n", true},
		{"the only entry", "- a\n", "- a", "", true},
		{"not there", mdMemory, "- not there", mdMemory, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Remove([]byte(tc.content), tc.text)
			if string(got) != tc.want || ok != tc.ok {
				t.Fatalf("Remove: %v\n%q\nwant %v:\n%q", ok, got, tc.ok, tc.want)
			}
		})
	}
}

// A random memory file and a random set of entry edits of it, for the
// property tests: headings and other lines stay, entries are edited,
// added and removed.

var mdWordsEN = strings.Fields("Alice Bob prefers short answers deploys production staging review main branch tests always never " +
	"approval release Tuesday Berlin editor theme dark export billing roadmap token rotate weekly backup logs")
var mdWordsZH = []string{"技术术语", "预发布环境", "代码注释", "保持英文", "每周一", "发布流程", "审批", "回复", "简体中文", "数据"}

type mdGenBlock struct {
	kind BlockKind
	text string // without a final newline
}

type mdGenFile struct {
	sections []mdGenSection
	nl       string
	final    bool // ends with a newline
}

type mdGenSection struct {
	heading string
	groups  [][]mdGenBlock // a group is a tight list, or one other block
}

func mdGenSentence(r *rand.Rand, unique *int) string {
	var ws []string
	zh := r.IntN(4) == 0
	for range 2 + r.IntN(6) {
		if zh {
			ws = append(ws, mdWordsZH[r.IntN(len(mdWordsZH))])
		} else {
			ws = append(ws, mdWordsEN[r.IntN(len(mdWordsEN))])
		}
	}
	if unique != nil {
		*unique++
		ws = append(ws, fmt.Sprintf("n%d", *unique))
	}
	if zh {
		return strings.Join(ws, "") + "。"
	}
	return strings.Join(ws, " ") + "."
}

func mdGenEntry(r *rand.Rand, kind BlockKind, unique *int) mdGenBlock {
	s := mdGenSentence(r, unique)
	switch kind {
	case ItemBlock:
		marker := []string{"- ", "- ", "* ", "1. ", "- [ ] ", "  - "}[r.IntN(6)]
		if r.IntN(3) == 0 {
			s += "\n" + strings.Repeat(" ", len(marker)) + mdGenSentence(r, nil)
		}
		return mdGenBlock{ItemBlock, marker + s}
	case CodeBlock:
		return mdGenBlock{CodeBlock, "```bash\n" + s + "\n```"}
	case QuoteBlock:
		return mdGenBlock{QuoteBlock, "> " + s}
	}
	if r.IntN(3) == 0 {
		s += "\n" + mdGenSentence(r, nil)
	}
	return mdGenBlock{ParagraphBlock, s}
}

func mdGenGroup(r *rand.Rand, unique *int) []mdGenBlock {
	switch r.IntN(6) {
	case 0, 1, 2:
		var g []mdGenBlock
		for range 1 + r.IntN(4) {
			g = append(g, mdGenEntry(r, ItemBlock, unique))
		}
		if strings.HasPrefix(g[0].text, " ") { // a list does not start nested
			g[0].text = strings.TrimLeft(g[0].text, " ")
		}
		return g
	case 3:
		return []mdGenBlock{mdGenEntry(r, CodeBlock, unique)}
	case 4:
		return []mdGenBlock{mdGenEntry(r, QuoteBlock, unique)}
	}
	return []mdGenBlock{mdGenEntry(r, ParagraphBlock, unique)}
}

// mdGenerate makes a random file. One without entries ends with a
// newline: Diff learns the old bytes from the old entries, so for a file
// without any, Undo assumes that.
func mdGenerate(r *rand.Rand) *mdGenFile {
	f := &mdGenFile{nl: "\n", final: r.IntN(8) != 0}
	if r.IntN(5) == 0 {
		f.nl = "\r\n"
	}
	for s := range r.IntN(5) {
		sec := mdGenSection{heading: fmt.Sprintf("## Section %d", s)}
		if s == 0 && r.IntN(2) == 0 {
			sec.heading = "# MEMORY.md"
		}
		for range r.IntN(4) {
			// Old files may hold duplicates: no unique words.
			sec.groups = append(sec.groups, mdGenGroup(r, nil))
		}
		f.sections = append(f.sections, sec)
	}
	if !slices.ContainsFunc(f.sections, func(s mdGenSection) bool { return len(s.groups) > 0 }) {
		f.final = true
	}
	return f
}

func (f *mdGenFile) render() string {
	var parts []string
	for _, s := range f.sections {
		parts = append(parts, s.heading)
		for _, g := range s.groups {
			var bs []string
			for _, b := range g {
				bs = append(bs, b.text)
			}
			parts = append(parts, strings.Join(bs, "\n"))
		}
	}
	out := strings.Join(parts, "\n\n")
	if f.final && out != "" {
		out += "\n"
	}
	return strings.ReplaceAll(out, "\n", f.nl)
}

func (f *mdGenFile) clone() *mdGenFile {
	c := *f
	c.sections = slices.Clone(f.sections)
	for i := range c.sections {
		c.sections[i].groups = slices.Clone(c.sections[i].groups)
		for j := range c.sections[i].groups {
			c.sections[i].groups[j] = slices.Clone(c.sections[i].groups[j])
		}
	}
	return &c
}

// mutate edits, adds and removes entries; new text is unique, so no edit
// makes an entry look moved.
func (f *mdGenFile) mutate(r *rand.Rand, unique *int) {
	if len(f.sections) == 0 {
		return
	}
	for range 1 + r.IntN(4) {
		s := &f.sections[r.IntN(len(f.sections))]
		switch op := r.IntN(5); {
		case len(s.groups) == 0 || op == 0: // a new block or list
			g := mdGenGroup(r, unique)
			k := r.IntN(len(s.groups) + 1)
			s.groups = slices.Insert(s.groups, k, g)
		case op == 1: // edit an entry, a little or completely
			g := s.groups[r.IntN(len(s.groups))]
			k := r.IntN(len(g))
			if r.IntN(2) == 0 {
				// A word more on its first line (after a closing fence it
				// would unfence the block).
				*unique++
				first, rest, _ := strings.Cut(g[k].text, "\n")
				g[k].text = first + fmt.Sprintf(" n%d", *unique)
				if rest != "" {
					g[k].text += "\n" + rest
				}
			} else {
				nb := mdGenEntry(r, g[k].kind, unique)
				if g[k].kind == ItemBlock {
					nb.text = strings.TrimLeft(nb.text, " ")
				}
				g[k] = nb
			}
		case op == 2 || op == 3: // remove an entry
			gi := r.IntN(len(s.groups))
			g := s.groups[gi]
			k := r.IntN(len(g))
			g = slices.Delete(g, k, k+1)
			if len(g) == 0 {
				s.groups = slices.Delete(s.groups, gi, gi+1)
			} else {
				if k == 0 {
					g[0].text = strings.TrimLeft(g[0].text, " ")
				}
				s.groups[gi] = g
			}
		default: // add an item to a list
			gi := r.IntN(len(s.groups))
			g := s.groups[gi]
			if g[0].kind != ItemBlock {
				continue
			}
			nb := mdGenEntry(r, ItemBlock, unique)
			k := r.IntN(len(g) + 1)
			if k == 0 {
				nb.text = strings.TrimLeft(nb.text, " ")
			}
			s.groups[gi] = slices.Insert(g, k, nb)
		}
	}
}

// Undoing every change Diff finds gives back the old file, byte for byte,
// for files that differ only in entries.
func TestUndoAllRestoresOld(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	unique := 0
	for i := range 3000 {
		f := mdGenerate(r)
		g := f.clone()
		g.mutate(r, &unique)
		old, new := f.render(), g.render()
		now := Parse([]byte(new))
		cs := Diff(Parse([]byte(old)), now)
		if got := string(Undo([]byte(new), now, cs)); got != old {
			t.Fatalf("case %d: undoing %q\nof %q\ngives %q\nwant %q", i, mdChangeStrings(cs.Changes), new, got, old)
		}
	}
}

// Undoing some of the changes undoes exactly those (the file's entries
// are the new ones minus the undone additions plus the undone removals),
// and undoing the rest of what then differs gives back the old file.
func TestUndoSomeThenTheRest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	unique := 0
	for i := range 3000 {
		f := mdGenerate(r)
		g := f.clone()
		g.mutate(r, &unique)
		old, new := f.render(), g.render()
		oldE, now := Parse([]byte(old)), Parse([]byte(new))
		cs := Diff(oldE, now)
		want := map[string]int{}
		for _, e := range now {
			want[e.Text]++
		}
		some := cs.Select(func(_ int, c Change) bool {
			if r.IntN(2) == 0 {
				return false
			}
			if c.New != nil {
				want[c.New.Text]--
			}
			if c.Old != nil {
				want[c.Old.Text]++
			}
			return true
		})
		mid := Undo([]byte(new), now, some)
		midE := Parse(mid)
		got := map[string]int{}
		for _, e := range midE {
			got[e.Text]++
		}
		for k, v := range want {
			if v == 0 {
				delete(want, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: undoing %q\nof %q\ngives %q\nentries %v, want %v", i, mdChangeStrings(some.Changes), new, mid, got, want)
		}
		rest := Diff(oldE, midE)
		if final := string(Undo(mid, midE, rest)); final != old {
			t.Fatalf("case %d: undoing %q\nof %q\ngives %q\nthen undoing %q gives %q\nwant %q", i, mdChangeStrings(some.Changes), new, mid, mdChangeStrings(rest.Changes), final, old)
		}
	}
}

// mdSkeleton is content with each run of adjacent entries replaced by one
// NUL byte and the run's line ending, and the run each entry is in. ok is
// false if the entries of a run end their lines differently.
func mdSkeleton(content []byte, es []Entry) (skel string, runs []int, ok bool) {
	var b strings.Builder
	runs = make([]int, len(es))
	at, run := 0, -1
	term := func(e Entry) string { return string(content[e.Start+len(e.Text) : e.End]) }
	ok = true
	for i, e := range es {
		if i == 0 || e.Start != es[i-1].End {
			b.Write(content[at:e.Start])
			b.WriteByte(0)
			run++
		} else if term(es[i-1]) != term(e) && !(e.End == len(content) && term(e) == "") {
			ok = false
		}
		runs[i] = run
		at = e.Start + len(e.Text)
	}
	b.Write(content[at:])
	return b.String(), runs, ok
}

// mdSameShape reports whether old and new differ only in entries: the
// same lines outside entries, between the same runs of entries, and the
// entries both have (kept or changed) in the same order and runs.
func mdSameShape(old, new []byte, oldE, newE []Entry, cs []Change) bool {
	so, ro, oko := mdSkeleton(old, oldE)
	sn, rn, okn := mdSkeleton(new, newE)
	if so != sn || !oko || !okn {
		return false
	}
	index := func(es []Entry, e *Entry) int {
		i, _ := slices.BinarySearchFunc(es, e.Start, func(x Entry, s int) int { return x.Start - s })
		return i
	}
	inOld, inNew := make([]bool, len(oldE)), make([]bool, len(newE))
	type pair struct{ i, j int }
	var pairs []pair
	for _, c := range cs {
		i, j := -1, -1
		if c.Old != nil {
			i = index(oldE, c.Old)
			inOld[i] = true
		}
		if c.New != nil {
			j = index(newE, c.New)
			inNew[j] = true
		}
		if i >= 0 && j >= 0 {
			pairs = append(pairs, pair{i, j})
		}
	}
	var ko, kn []int
	for i := range oldE {
		if !inOld[i] {
			ko = append(ko, i)
		}
	}
	for j := range newE {
		if !inNew[j] {
			kn = append(kn, j)
		}
	}
	if len(ko) != len(kn) {
		return false
	}
	for k := range ko {
		if oldE[ko[k]].Text != newE[kn[k]].Text {
			return false
		}
		pairs = append(pairs, pair{ko[k], kn[k]})
	}
	slices.SortFunc(pairs, func(x, y pair) int { return x.i - y.i })
	for k, p := range pairs {
		if ro[p.i] != rn[p.j] || k > 0 && p.j <= pairs[k-1].j {
			return false
		}
	}
	return true
}

func FuzzUndo(f *testing.F) {
	for _, tc := range mdEdits {
		f.Add([]byte(tc.old), []byte(tc.new), uint64(len(tc.name)))
	}
	f.Add([]byte(mdClaude), []byte(mdEditText(mdClaude, "1. Comments", "1. Comments, always,")), uint64(7))
	f.Add([]byte("- a\n- b\n"), []byte("- b\n- a\n"), uint64(1))
	f.Add([]byte("<!--\n- a\n"), []byte("- a\n<!--\n"), uint64(3))
	f.Add([]byte(strings.TrimSuffix(mdBerlin, "\n")), []byte(mdBerlin), uint64(54)) // only a final newline added: not "only entries"
	f.Add([]byte("0"), []byte("```\n\n"), uint64(7))                                // blank lines end a fence open to the end
	f.Add([]byte("#\n0\n# \n0"), []byte(" "), uint64(0))                            // a blank last line without a newline
	f.Fuzz(func(t *testing.T, old, new []byte, pick uint64) {
		oldE, now := Parse(old), Parse(new)
		mdCheckEntries(t, old, oldE)
		mdCheckEntries(t, new, now)
		for _, e := range oldE {
			_ = e.Summary()
		}
		cs := Diff(oldE, now)
		for _, c := range cs.Changes {
			if c.Kind == Added && (c.Old != nil || c.New == nil) || c.Kind == Removed && (c.New != nil || c.Old == nil) ||
				c.Kind == Changed && (c.Old == nil || c.New == nil) {
				t.Fatalf("malformed change %+v", c)
			}
		}
		got := Undo(new, now, cs)
		if mdSameShape(old, new, oldE, now, cs.Changes) && string(got) != string(old) {
			t.Fatalf("undoing %q\nof %q\ngives %q\nwant %q", mdChangeStrings(cs.Changes), new, got, old)
		}
		_ = Undo(new, now, cs.Select(func(k int, _ Change) bool { return pick>>(k%64)&1 == 1 }))
		if len(oldE) > 0 {
			e := oldE[int(pick%uint64(len(oldE)))]
			_ = Insert(new, e.Heading, "", e.Text)
			_ = Insert(new, append(slices.Clone(e.Heading), "x"), "- gone", e.Text)
			_, _ = Replace(new, e.Text, "- x")
			_, _ = Remove(new, e.Text)
		}
	})
}
