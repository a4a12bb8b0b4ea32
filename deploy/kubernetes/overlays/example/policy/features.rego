# Text features: which keyword lists (data.memgate.features.keywords) occur
# in the normalized text, and which patterns (data.memgate.features.patterns)
# match the raw text.
#
# The sidecar computes them in Go and passes them as
# input.candidate.text_features ({name: true}), since a keyword loop in Rego
# costs far more than the rest of the decision. Without that field (plain
# `opa test`, other hosts) the same features are computed here from the same
# data, so the policy means the same thing either way.
package memgate

text_features := f if {
	f := input.candidate.text_features
} else := computed_features

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

# text is the summary normalized for keyword matching: lowercase, every rune
# that is not a letter or digit a space, spaces collapsed, no space next to a
# Chinese character, one space at each end. The sidecar computes it.
text := object.get(input.candidate, "text_norm", "")

raw_texts := [
	object.get(input.candidate, "summary", ""),
	object.get(input.candidate, ["evidence", "excerpt"], ""),
	value_text,
]

value_text := json.marshal(input.candidate.value) if has_value(input.candidate)

else := ""

has_value(rec) if rec.value != null
