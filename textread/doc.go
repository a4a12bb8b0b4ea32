// Package textread tells what the policy's classifier can read of a text,
// and decodes what a writer hid from it.
//
// memgate's lexicons and classifier read English and Chinese. A rule
// written in another language, or written in English but encoded, would
// otherwise read as nothing at all, and nothing reads as low risk: the
// first thing an attacker tries after a rule is parked is the same rule in
// German, in base64 or backwards. So policy is told, for every write:
//
//   - [Language]: the language family of a text, from its scripts and its
//     function words: English (and any Latin text the lists do not place),
//     Chinese, or another language (Japanese kana, Korean, Cyrillic,
//     Arabic, …, and Latin text whose function words are German, French,
//     Spanish, Portuguese, Italian or Dutch). Policy sends text in another
//     language to the judge when one is configured and to a reviewer
//     otherwise; an operator may choose to apply it.
//   - [Decode]: the readings hidden in a text, each decoded: base64 and
//     hex runs that decode to readable text, a text that reads as English
//     once rot13 is undone or once it is reversed, and words spelled out
//     letter by letter ("d i s r e g a r d  y o u r  r u l e s"). Policy
//     matches its lexicons against the readings as well as the text, so an
//     encoded rule is judged as the rule; a rot13 or reversed text is
//     obfuscated, which no ordinary memory is.
//
// Both work on text as written (before textfold's look-alike folding,
// which maps Cyrillic and Greek letters that look Latin to ASCII: a
// Russian sentence must still read as Russian, while an English one
// written with look-alikes is folded by the caller and reads as English).
// Neither allocates much or runs a regular expression: they run on every
// write. Inputs are bounded by the caller (a memory's fields are).
package textread
