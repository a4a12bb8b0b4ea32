# Text features: which keyword lists (config.features.keywords) occur
# in the normalized texts, which lead lists (config.features.leads) start
# one of its normalized clauses (input.candidate.text_clauses), which patterns (config.features.patterns)
# match the raw text, the first feature of each ranked list
# (config.features.first) and the first capture of each capture spec
# (config.features.captures).
#
# The host computes them and passes them on the candidate as text_features
# ({name: true}), text_first ({list: name}) and text_captures ({name:
# string}): the sidecar does it in Go, since a keyword loop in Rego costs
# far more than a whole decision. The rules read only those fields. The
# definitions below are the reference: the Rego tests build their inputs
# with them (helpers_test.rego), and a Go test checks the sidecar computes
# the same values.
package memgate

import data.memgate_config as config

computed_features[name] := true if {
	some name, keywords in config.features.keywords
	not config.features.except[name]
	some kw in keywords
	contains(scan_text, kw)
}

# A list with except phrases is matched with those phrases blanked out.
computed_features[name] := true if {
	some name, phrases in config.features.except
	masked := strings.replace_n({p: " " | some p in phrases}, scan_text)
	some kw in config.features.keywords[name]
	contains(masked, kw)
}

# The builtin features have no Rego definition: the sidecar reads the
# texts' language and decodes what was hidden in them (package textread)
# and reports what it found as text_read.
computed_features[name] := true if {
	some name in config.features.builtin
	input.candidate.text_read[name]
}

computed_features[name] := true if {
	some name, patterns in config.features.patterns
	some pattern in patterns
	some raw in raw_texts
	regex.match(pattern, raw)
}

computed_features[name] := true if {
	some name, words in config.features.leads
	some clause in input.candidate.text_clauses
	some w in words
	startswith(clause, w)
}

computed_first[list] := [n | some n in names; computed_features[n]][0] if {
	some list, names in config.features.first
}

computed_captures[name] := [n |
	some pattern in spec.patterns
	some m in regex.find_all_string_submatch_n(pattern, text, -1)
	some i, n in m
	i > 0
	n != ""
	not n in spec.exclude
][0] if {
	some name, spec in config.features.captures
}

# The candidate's fields are read one by one, never input.candidate as a
# whole: the sidecar builds only the parts of the input a policy refers to.

# text is the summary normalized for keyword matching: lowercase, every rune
# that is not a letter or digit a space, spaces collapsed, no space next to a
# Chinese character, one space at each end. The sidecar computes it.
default text := ""

text := input.candidate.text_norm

default summary := ""

summary := input.candidate.summary

# scan_text is what keyword lists are matched against: the normalized
# summary, then each of the candidate's other texts normalized (its value's
# and metadata's keys and strings, its evidence unless that is the
# conversation it was drawn from (config.features.context_sources), and
# every reading decoded from them), as the sidecar computes it.
default scan_text := ""

scan_text := t if {
	t := input.candidate.text_scan
} else := text

# raw_texts are what patterns are matched against: the summary, the
# evidence excerpt, the value as JSON and the other texts as written.
raw_texts := array.concat([summary, excerpt, value_text], more_texts)

default more_texts := []

more_texts := input.candidate.text_more

default excerpt := ""

excerpt := input.candidate.evidence.excerpt

value_text := json.marshal(input.candidate.value) if candidate_has_value

else := ""

candidate_has_value if input.candidate.value != null
