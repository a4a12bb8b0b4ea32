# Text features: which keyword lists (data.memgate.features.keywords) occur
# in the normalized text, which patterns (data.memgate.features.patterns)
# match the raw text, the first feature of each ranked list
# (data.memgate.features.first) and the first capture of each capture spec
# (data.memgate.features.captures).
#
# The sidecar computes all of them in Go and passes them as
# input.candidate.text_features ({name: true}), text_first ({list: name}) and
# text_captures ({name: string}), since a keyword loop in Rego costs far more
# than the rest of the decision. Without those fields (plain `opa test`,
# other hosts) the same values are computed here from the same data, so the
# policy means the same thing either way.
package memgate

text_features := f if {
	f := input.candidate.text_features
} else := computed_features

text_first := f if {
	input.candidate.text_features
	f := input.candidate.text_first
} else := computed_first

text_captures := c if {
	input.candidate.text_features
	c := input.candidate.text_captures
} else := computed_captures

computed_features[name] := true if {
	some name, keywords in data.memgate.features.keywords
	some kw in keywords
	contains(text, kw)
}

computed_features[name] := true if {
	some name, patterns in data.memgate.features.patterns
	some pattern in patterns
	some raw in raw_texts
	regex.match(pattern, raw)
}

computed_first[list] := [n | some n in names; computed_features[n]][0] if {
	some list, names in data.memgate.features.first
}

computed_captures[name] := [n |
	some pattern in spec.patterns
	some m in regex.find_all_string_submatch_n(pattern, text, -1)
	some i, n in m
	i > 0
	n != ""
	not n in spec.exclude
][0] if {
	some name, spec in data.memgate.features.captures
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

raw_texts := [summary, excerpt, value_text]

default excerpt := ""

excerpt := input.candidate.evidence.excerpt

value_text := json.marshal(input.candidate.value) if candidate_has_value

else := ""

candidate_has_value if input.candidate.value != null

has_value(rec) if rec.value != null
