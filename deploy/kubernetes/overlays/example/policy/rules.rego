# The rules of the two-tier model. Each adds its id to `fired`; its action,
# risk, categories and message are in data.memgate.config.rules, so an
# operator can retune a rule with data alone.
#
# Conditions test input directly where they can, first: OPA indexes rules on
# input equalities and skips those that cannot match, and every helper rule
# referenced costs about a microsecond.
package memgate

# reject: what must never be remembered.
fired contains "secret_detected" if text_features.secret

# review: strategy constraints and permission boundaries, also when the text
# states one but the writer filed it as knowledge or a preference.
fired contains strategy_rule if {
	layer == "policy"
	not unchanged
}

strategy_rule := r if {
	r := data.memgate.config.topics[topic].rule
} else := "strategy_constraint"

fired contains "strategy_in_text" if {
	layer in {"knowledge", "preference"}
	data.memgate.config.topics[text_topic].layer == "policy"
}

# review: replacing or deleting what is active, and racing a parked write.
fired contains rule if {
	input.op != "delete"
	is_object(input.current)
	differs(input.current)
	rule := data.memgate.config.override_review_layers[layer]
}

fired contains "delete_key_fact" if {
	input.op == "delete"
	layer in data.memgate.config.key_layers
}

fired contains "pending_conflict" if {
	input.op != "delete"
	some p in input.pending
	differs(p)
}

# model inferences.
fired contains "inference_key_fact" if {
	input.candidate.candidateSource == "model-inference"
	layer in data.memgate.config.key_layers
	not unchanged
}

fired contains "inference_unverified" if {
	input.candidate.candidateSource == "model-inference"
	input.op != "delete"
	layer == "knowledge"
	not has_evidence
}

# apply: the low-risk baseline of each layer. Overrides of knowledge and
# state have none: the override rules above decide them.
fired contains baseline

baseline := "same_as_current" if {
	unchanged
} else := "delete" if {
	input.op == "delete"
	not layer in data.memgate.config.key_layers
} else := b if {
	input.op != "delete"
	b := {"checkpoint": "checkpoint", "preference": "preference"}[layer]
} else := "knowledge_verified" if {
	input.op != "delete"
	layer == "knowledge"
	not is_object(input.current)
	not unverified_inference
} else := "new_fact" if {
	input.op != "delete"
	layer == "state"
	not is_object(input.current)
}

# unchanged: the write repeats the slot's active version.
unchanged if {
	input.op != "delete"
	is_object(input.current)
	not differs(input.current)
}

unverified_inference if {
	input.candidate.candidateSource == "model-inference"
	not has_evidence
}

has_evidence if input.candidate.evidence.excerpt != ""

has_evidence if input.candidate.evidence.sourceRef != ""

# differs(rec) compares the candidate with another version of its slot: on
# structured values when both have one, else on the normalized text.
differs(rec) := input.candidate.value != rec.value if {
	has_value(input.candidate)
	has_value(rec)
} else := text != object.get(rec, "text_norm", "")
