// Package textfold folds look-alike text so that what a reader sees and what
// policy matches are the same string, and so that identifiers that look the
// same name one memory slot.
//
// # Text
//
// [Text] returns the form of a memory's text that the classifier reads. It
// is never stored. In order it:
//
//   - replaces invalid UTF-8 with U+FFFD;
//   - removes invisible characters: every format character (category Cf:
//     zero-width space, joiners, word joiner, BOM, soft hyphen, bidi controls,
//     Mongolian vowel separator, tag characters, ...), every other
//     Default_Ignorable_Code_Point (variation selectors, combining grapheme
//     joiner U+034F, Hangul fillers, ...) and C0/C1 control characters other
//     than white space (tab, newline, CR, VT, FF, NEL are kept);
//   - applies NFKC, which folds full-width forms (ＡＢＣ→ABC, ，→,),
//     mathematical bold/italic/double-struck letters, circled and
//     parenthesised letters, ligatures (ﬁ→fi), superscripts and subscripts
//     that have a compatibility mapping (ᵃ→a, ²→2) and long s (ſ→s);
//   - folds look-alikes: each rune that is not ASCII and not Chinese,
//     Japanese or Korean (Han, Hiragana, Katakana, Hangul, Bopomofo, CJK
//     punctuation and symbols) is replaced by its ASCII prototype from
//     Unicode's confusables data (UTS #39) when it has one: Cyrillic а→a,
//     Greek ο→o, Cyrillic І→I, dotless ı→i, ‐ (U+2010)→-, ’→', ×→x, æ→ae.
//     Latin small capitals (ᴀ→a) and negative circled/squared letters (🅐→A)
//     are folded from a small local table, as the confusables data lacks
//     most of them.
//
// ASCII is never mapped: the full UTS #39 skeleton would turn "m" into
// "rn" and "I" into "l", which breaks keyword matching on ordinary English.
// For the same reason a prototype that is only the skeleton's stand-in for
// an ASCII class is mapped back to the natural character: "rn" becomes m,
// a pair of apostrophes becomes ", "l" becomes I for capitals, 1 for digits
// and | for symbols, and "O" or "o" becomes 0 for digits.
//
// Case is kept (callers lowercase). Chinese and Japanese text comes out
// as NFKC leaves it, and “ ” (U+201C/D), the primary quotation marks of
// Chinese, are kept; ‘ ’ fold to ' because ’ is the typographic apostrophe
// of English ("don’t"). Accented letters are real letters, not look-alikes,
// and are kept: "naïve café résumé" is unchanged, as is a Latin letter
// followed by combining marks that NFKC cannot compose. German ß is left
// as NFKC leaves it (ß stays ß; NFKC is not case folding, so it is not
// turned into "ss"), and ẞ stays ẞ. A letter whose prototype carries
// punctuation (Vietnamese ơ → "o'") is kept, since that prototype is the
// letter's diacritic, not a look-alike.
//
// # Identifiers
//
// [ID] normalises a subject id or fact type so that look-alikes name one
// slot: NFKC, invisible characters removed, white space trimmed at both
// ends, look-alikes folded as Text folds them, and composed (the result is
// NFC, so "caf\u00e9" and "cafe\u0301" are one id). Punctuation and
// symbols fold in every id. Letters and digits fold only when the id
// contains an ASCII letter (a mixed-script look-alike such as
// "proj-c\u0430fe") or when every letter has an ASCII prototype (a
// whole-script look-alike such as Cyrillic "рора"); an id written in
// another script ("проект", "项目甲") keeps its letters and its digits,
// since some digits only look like others (Bengali ৪ is four; its
// prototype is 8). "café" and "cafe" stay two ids: é is a real letter of
// many languages, and folding it would merge distinct names. ID reports an
// error when the input is not valid UTF-8, or when the result is empty or
// contains a control character (interior tabs and newlines included).
//
// # Known limits
//
//   - Only single characters are folded: confusables that are whole words or
//     sequences ("rn" for m, "vv" for w, "cl" for d) are not.
//   - Homoglyphs without an ASCII prototype in the data are kept (Cyrillic
//     п, к, т; most Greek lower-case letters beyond α ι ν ο ρ σ υ γ), as are
//     look-alikes with a diacritic (Cyrillic ё, й).
//   - Combining marks on ASCII letters are kept, as accents are: text
//     struck through with U+0336 or stacked with marks ("Zalgo") does not
//     read as the bare word; a caller that wants that must strip marks.
//     Blank-looking characters that are not format characters (U+2800
//     braille blank) are kept too.
//   - Leetspeak and other deliberate misspellings (p4ssw0rd, "p a s s") are
//     not undone; nor are regional-indicator letters (🇦), which form flags.
//   - Genuine text in scripts with ASCII look-alikes (Russian, Greek,
//     Cherokee, ...) is partly turned into ASCII by Text; that text is only
//     classified, never stored, and policy's keyword lists are English and
//     Chinese. Ligature letters æ, œ fold to ae, oe in Text and in ids that
//     contain an ASCII letter.
//   - The confusables data is the one go.mau.fi/util/confusable ships
//     (Unicode 17); NFKC and character properties come from
//     golang.org/x/text and the standard library (Unicode 15), so characters
//     newer than Unicode 15 are not recognised as format characters.
package textfold
