package facts

import (
	"slices"
	"strings"
	"unicode"

	"github.com/memgate/memgate/textfold"
)

// Relation is how a new text relates to an active memory's text.
type Relation int

const (
	Distinct Relation = iota // another fact
	Possible                 // maybe one fact: kept apart, and named
	Update                   // a new value of the memory's fact
	Repeat                   // states what the memory states
)

func (r Relation) String() string {
	return [...]string{"distinct", "possible", "update", "repeat"}[r]
}

// Compare tells how the text of a write relates to the text of an active
// memory, with a short reason (see the package documentation).
func Compare(text, memory string) (Relation, string) {
	return compare(parse(text), parse(memory))
}

// compare is Compare of two parsed texts.
func compare(a, b *clause) (Relation, string) {
	if a.folded == b.folded {
		return Repeat, "the same text"
	}
	if len(a.words) == 0 || len(b.words) == 0 {
		return Distinct, ""
	}
	if slices.Equal(a.words, b.words) {
		if a.neg == b.neg {
			return Repeat, "the same words"
		}
		return Update, "the same fact, negated"
	}
	if a.piv >= 0 && b.piv >= 0 && slices.Equal(a.key, b.key) && slices.Equal(a.context, b.context) && a.cls&b.cls != 0 {
		if slices.Equal(a.value, b.value) {
			if a.neg == b.neg {
				return Repeat, "the same fact and value"
			}
			return Update, "the same fact, negated"
		}
		return a.valueChange(b)
	}
	if a.changed && numberChanged(a.words, b.words) {
		return Update, "the same words with another number, and the writer says it changed"
	}
	if overlap(a.words, b.words) >= mostWords {
		return Possible, "most words in common"
	}
	return Distinct, ""
}

// numberChanged reports two texts whose words are the same but for a
// number near their end: "the user wakes up at 6 am" and "… now at 7:30
// am", "每天早上七点起床" and "现在六点". The same words before it (two at
// least) name the fact; a number with more than two words after it names
// what the rest is about ("the meeting on March 3 is at 10" and "… March
// 5 …" are two meetings), and so does one right at the start ("Room 101
// is booked"). A number can name a thing in the middle of a text too
// ("I keep plant number 1 on the windowsill"): compare counts it as a
// new value only where the new text says the value changed (now, 现在,
// 已经: clause.changed).
func numberChanged(a, b []string) bool {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	da, db := a[pre:len(a)-suf], b[pre:len(b)-suf]
	after := suf
	if isHanWord(a[len(a)-suf:]) {
		after = (suf + 1) / 2 // a Chinese character is about half a word
	}
	return pre >= 2 && after <= 2 && len(da) >= 1 && len(da) <= 2 && len(db) >= 1 && len(db) <= 2 &&
		allNumbers(da) && allNumbers(db)
}

// allNumbers reports words that are each a number (isNumber).
func allNumbers(ws []string) bool {
	for _, w := range ws {
		if !isNumber(w) {
			return false
		}
	}
	return true
}

// isNumber reports a word that is a number: digits (85k, 7:30, 1.22) or a
// Chinese numeral.
func isNumber(w string) bool {
	return strings.ContainsFunc(w, unicode.IsDigit) || w != "" && strings.Trim(w, "零一二两三四五六七八九十百千万") == ""
}

// valueChange decides between two texts with one key, relation and
// context and different values.
func (a *clause) valueChange(b *clause) (Relation, string) {
	cls := a.cls & b.cls
	switch {
	case (a.cls|b.cls)&relChange != 0 && cls&(relCopula|relUse|relPlace) != 0 && (a.attribute || cls&relCopula == 0):
		return Update, "a change of the fact's value"
	case cls&(relPlace|relEmployer) != 0:
		return Update, "a new value of a fact that holds one at a time"
	case cls&relCopula != 0 && a.attribute && b.attribute && (a.named && b.named || sharesHead(a.value, b.value)):
		return Update, "a new value of the same attribute"
	case cls&(relPrefer|relUse) != 0 && sharesHead(a.value, b.value):
		return Update, "a new value of the same preference"
	}
	return Possible, "the same fact with another value that may hold beside it"
}

// relation classes a pivot belongs to; two texts name one fact only if
// their pivots share one.
const (
	relCopula   = 1 << iota // is, was, became, changed to, 是, 改为
	relPlace                // lives in, moved to, 住在, 搬到
	relEmployer             // works at, works for
	relPrefer               // prefers, likes, 喜欢
	relUse                  // uses, switched to, 使用
	relChange               // the writer says the value changed: changed to, switched to, moved to, 改为
)

// clause is a text read as key, relation, value and context.
type clause struct {
	folded    string   // textfold.Key of the text
	words     []string // canonical words in order, fillers and negations dropped
	neg       bool     // a negation was dropped
	changed   bool     // a word saying the value changed was dropped (now, 现在, 已经)
	piv       int      // where the relation starts in words; -1: none
	cls       int      // the relation's classes
	key       []string // the words before the relation
	value     []string // the value after it
	context   []string // a phrase after the value starting with a preposition
	attribute bool     // the key names an attribute, not only an entity
	// named: the value reads as a value, not a description: a name, a
	// number or an identifier (Tom, 42, eu-west-1; any Chinese value),
	// where "a nurse", "hiring" or "green" may describe beside another.
	named bool
}

type pivot struct {
	words []string
	cls   int
}

// pivots are the relations a text is split at, longest first.
var pivots = func() []pivot {
	var out []pivot
	add := func(cls int, phrases ...string) {
		for _, p := range phrases {
			out = append(out, pivot{words: splitPhrase(p), cls: cls})
		}
	}
	add(relCopula, "is", "are", "was", "were", "be", "been", "equal", "=", "是", "为")
	add(relCopula|relChange, "became", "become", "has become", "have become", "changed to", "has changed to",
		"is changed to", "was changed to", "updated to", "set to", "is set to", "改为", "改成", "换成", "变成", "变为",
		"更新为", "设为", "设置为", "调整为", "定为")
	// A value told by how it changed: the verb says the attribute before
	// it held another value and now holds this one.
	add(relCopula|relChange, "was updated to", "has been updated to", "is updated to", "upgraded to", "was upgraded to",
		"has been upgraded to", "is upgraded to", "downgraded to", "was downgraded to", "bumped to", "was bumped to",
		"raised to", "was raised to", "has been raised to", "lowered to", "was lowered to", "increased to",
		"was increased to", "has increased to", "decreased to", "was decreased to", "reduced to", "was reduced to",
		"cut to", "was cut to", "has been cut to", "grew to", "has grown to", "dropped to", "has dropped to",
		"fell to", "rose to", "went up to", "went down to", "is up to", "is down to", "renamed to", "was renamed to",
		"has been renamed to", "postponed to", "was postponed to", "pushed to", "was pushed to", "pushed back to",
		"rescheduled to", "was rescheduled to", "rescheduled for", "was rescheduled for", "extended to", "was extended to",
		"改到", "改在", "调到", "调成", "升级到", "升级为", "升级成", "升到", "降级到", "降到", "降为", "涨到", "涨为", "增加到",
		"增至", "减少到", "减至", "推迟到", "延期到", "延后到", "提前到", "延长到", "缩短到", "定在")
	add(relCopula|relPlace|relChange, "migrated to", "was migrated to", "has been migrated to", "is migrated to")
	add(relCopula|relPlace|relChange, "moved to", "has moved to", "move to", "is moved to", "relocated to", "迁移到", "迁到", "搬到", "迁至")
	add(relPlace, "live in", "live at", "is based in", "based in", "is located in", "located in", "reside in", "住在", "位于", "定居在", "常住")
	add(relEmployer, "work at", "work for", "is employed at", "is employed by", "joined", "就职于", "任职于")
	add(relPrefer, "prefer", "would rather", "want", "偏好", "喜欢", "偏爱", "更喜欢", "爱喝", "爱吃", "想要")
	add(relUse|relCopula|relPrefer|relChange, "switched to", "switch to", "has switched to", "切换到", "改用", "换用")
	add(relUse, "use", "is using", "run on", "run", "使用", "用")
	slices.SortStableFunc(out, func(a, b pivot) int { return len(b.words) - len(a.words) })
	return out
}()

// pivotsByFirst holds pivots by their first word, longest first.
var pivotsByFirst = func() map[string][]pivot {
	out := map[string][]pivot{}
	for _, p := range pivots {
		out[p.words[0]] = append(out[p.words[0]], p)
	}
	return out
}()

// fillers say nothing about a fact's key or value; negations are kept
// apart from them (clause.neg).
var fillers = phraseSet("a an the now currently still really actually also just very usually always typically " +
	"generally definitely truly already again do does did these_days nowadays today anymore recently lately " +
	"现在 目前 已经 仍然 一直 也 都 了 还 真的 非常 很 最近 如今")

// changeMarkers are the fillers that say a value changed.
var changeMarkers = phraseSet("now currently these_days nowadays anymore 现在 目前 已经 如今")

var negations = phraseSet("not no never no_longer doesn't don't didn't isn't aren't wasn't won't can't " +
	"not_anymore 不 没 没有 不再 从不 别")

// synonyms fold verbs that state one relation.
var synonyms = map[string]string{"like": "prefer", "love": "prefer", "favor": "prefer", "favour": "prefer",
	"enjoy": "prefer", "utilize": "use", "using": "use", "resides": "reside", "lived": "live", "currently": "now"}

// prepositions start the context phrase after a value.
var prepositions = map[string]bool{"on": true, "in": true, "at": true, "for": true, "when": true, "while": true,
	"during": true, "with": true, "from": true, "by": true, "to": true, "about": true, "before": true,
	"after": true, "if": true, "whenever": true, "via": true, "into": true, "of": true, "over": true, "than": true}

// pronouns name an entity, never an attribute.
var pronouns = map[string]bool{"i": true, "me": true, "my": true, "he": true, "she": true, "his": true, "her": true,
	"they": true, "their": true, "we": true, "our": true, "you": true, "your": true, "it": true, "its": true,
	"user": true, "their's": true, "我": true, "你": true, "他": true, "她": true, "它": true, "们": true, "用": true, "户": true}

func splitPhrase(p string) []string {
	if strings.ContainsFunc(p, isHan) {
		var out []string
		for _, r := range p {
			out = append(out, string(r))
		}
		return out
	}
	ws := strings.Fields(strings.ReplaceAll(p, "_", " "))
	for i, w := range ws {
		ws[i] = canon(w)
	}
	return ws
}

// phrases is a set of phrases, by first word.
type phrases map[string][][]string

// phraseSet reads phrases written with _ between their words.
func phraseSet(list string) phrases {
	out := phrases{}
	for _, p := range strings.Fields(list) {
		ws := splitPhrase(p)
		out[ws[0]] = append(out[ws[0]], ws)
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b []string) int { return len(b) - len(a) })
	}
	return out
}

// match returns the length of the longest phrase starting at ws[i], or 0.
func (p phrases) match(ws []string, i int) int {
	for _, ph := range p[ws[i]] {
		if i+len(ph) <= len(ws) && slices.Equal(ws[i:i+len(ph)], ph) {
			return len(ph)
		}
	}
	return 0
}

// parse reads a text as a clause.
func parse(text string) *clause {
	folded := textfold.Key(text)
	raw, caps := tokens(text, folded)
	c := &clause{folded: folded, piv: -1}
	words := make([]string, 0, len(raw))
	capital := make([]bool, 0, len(raw))
	for i := 0; i < len(raw); {
		if n := negations.match(raw, i); n > 0 {
			c.neg = true
			i += n
			continue
		}
		if n := fillers.match(raw, i); n > 0 {
			if changeMarkers.match(raw, i) > 0 {
				c.changed = true
			}
			i += n
			continue
		}
		words = append(words, raw[i])
		capital = append(capital, caps[i])
		i++
	}
	c.words = words
	for i := range words {
		for _, p := range pivotsByFirst[words[i]] {
			if i+len(p.words) <= len(words) && slices.Equal(words[i:i+len(p.words)], p.words) && !partOfWord(words, i, p) {
				c.piv, c.cls = i, p.cls
				c.key = words[:i]
				rest := words[i+len(p.words):]
				c.value, c.context = rest, nil
				if !isHanWord(rest) {
					for j := 1; j < len(rest); j++ {
						if prepositions[rest[j]] {
							c.value, c.context = rest[:j], rest[j:]
							break
						}
					}
				}
				c.attribute = names(c.key, capital[:i])
				c.named = named(c.value, capital[i+len(p.words):])
				return c
			}
		}
	}
	return c
}

// partOfWord reports a one-character Chinese pivot that is part of a
// word (但是, 还是, 因为, 作为, 认为 …), not a relation.
func partOfWord(ws []string, i int, p pivot) bool {
	if len(p.words) != 1 || !isHanWord(p.words) {
		return false
	}
	if ws[i] == "用" && i+1 < len(ws) && strings.Contains("户于", ws[i+1]) {
		return true // 用户 (user), 用于 (used for)
	}
	return i > 0 && strings.Contains("但还就总于要可真正只若不也因作认成以称较行", ws[i-1])
}

// names reports whether a key names an attribute: an English word that is
// neither a pronoun nor capitalised (a name), or Chinese with 的 before
// its last word or of four characters or more.
func names(key []string, capital []bool) bool {
	han, de := 0, false
	for i, w := range key {
		if isHanWord([]string{w}) {
			if !pronouns[w] {
				han++
			}
			if w == "的" && i+1 < len(key) {
				de = true
			}
			continue
		}
		if !pronouns[w] && !capital[i] && !prepositions[w] {
			return true
		}
	}
	return de || han >= 4
}

// named reports whether a value reads as a value (clause.named).
func named(value []string, capital []bool) bool {
	for i, w := range value {
		if capital[i] || isHanWord([]string{w}) || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) {
			return true
		}
	}
	return false
}

// sharesHead reports whether two values have the same head: the last
// word that is not a number ("window seats" and "aisle seats", "Postgres
// 15" and "Postgres 16"; not "morning runs" and "morning meetings", which
// share only a modifier); Chinese values, whose head comes last, must end
// alike (靠窗的座位 and 靠过道的座位, 绿茶 and 红茶: not 喝咖啡 and 喝绿茶).
func sharesHead(a, b []string) bool {
	if isHanWord(a) || isHanWord(b) {
		return len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1]
	}
	ha, hb := head(a), head(b)
	return ha != "" && ha == hb
}

// head is the last word of an English value that is not a number nor a
// preposition, or "".
func head(ws []string) string {
	for i := len(ws) - 1; i >= 0; i-- {
		if w := ws[i]; !prepositions[w] && !strings.ContainsFunc(w, unicode.IsDigit) {
			return w
		}
	}
	return ""
}

// mostWords is the overlap from which two texts may be one fact. The
// index (index.go) finds such pairs by the same arithmetic (shareEnough).
const mostWords = 0.6

// shareEnough reports whether both words in common out of all count as
// most words in common: overlap's test, for the counts of two sets.
func shareEnough(both, all int) bool { return float64(both)/float64(all) >= mostWords }

// overlap is the Jaccard similarity of two word lists as sets.
func overlap(a, b []string) float64 {
	set := map[string]int{}
	for _, w := range a {
		set[w] |= 1
	}
	for _, w := range b {
		set[w] |= 2
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}

// tokens splits a text into canonical words (textfold.Key, one token per
// Chinese or Japanese character, possessive 's dropped, plurals and verb
// endings folded, synonyms folded) and says which were capitalised.
func tokens(text, folded string) (words []string, capital []bool) {
	caps := map[string]bool{}
	for _, w := range strings.FieldsFunc(textfold.Text(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		if r := []rune(w); len(r) > 0 && unicode.IsUpper(r[0]) {
			caps[strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "'S"))] = true
		}
	}
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := string(cur)
		cur = cur[:0]
		base := strings.TrimSuffix(w, "'s")
		words = append(words, canon(base))
		capital = append(capital, caps[base])
	}
	for _, r := range folded {
		switch {
		case r == ' ':
			flush()
		case r == '-' && len(cur) > 0 && unicode.IsLetter(cur[len(cur)-1]):
			// e-mail and email, on-call and oncall: one word (a hyphen
			// after a digit, as in 2-3, is kept)
		case isHan(r):
			flush()
			words = append(words, string(r))
			capital = append(capital, false)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words, capital
}

// canon folds one English word: synonyms, then plural and third-person
// endings.
func canon(w string) string {
	if s, ok := synonyms[w]; ok {
		return s
	}
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	if s, ok := synonyms[w]; ok {
		return s
	}
	return w
}

func isHan(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

func isHanWord(ws []string) bool {
	for _, w := range ws {
		for _, r := range w {
			return isHan(r)
		}
	}
	return false
}
