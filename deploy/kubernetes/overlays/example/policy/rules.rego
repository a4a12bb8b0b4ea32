# The rules of the two-tier model. Each adds its id to `fired`; its action,
# risk, categories and message are in data.memgate.config.rules, so an
# operator can retune a rule with data alone.
#
# Every expression evaluated costs about a microsecond, so the rules are
# written for the evaluator: conditions on the layer, the operation, the
# source and the dialect test input by equality, which OPA indexes (a rule
# that cannot match is never evaluated), and the condition that fails most
# often comes first in a body. The write is placed (free text has its layer,
# see placement.rego).
package memgate

# --- reject: what must never be remembered

fired contains "secret_detected" if input.candidate.text_features.secret == true

# --- review: strategy constraints and permission boundaries

fired contains strategy_rule if {
	input.candidate.layer == "policy"
	change != "same"
}

strategy_rule := r if {
	r := data.memgate.config.topics[input.candidate.factType].rule
} else := "strategy_constraint"

# The text states a strategy constraint the writer filed as knowledge or a
# preference: text_first.policy_topic is the first policy topic it names.
fired contains "strategy_in_text" if {
	input.candidate.layer == "knowledge"
	input.candidate.text_first.policy_topic
}

fired contains "strategy_in_text" if {
	input.candidate.layer == "preference"
	input.candidate.text_first.policy_topic
}

# --- review: replacing or deleting a key fact, racing a parked write

fired contains "state_override" if {
	input.candidate.layer == "state"
	change == "different"
}

fired contains "state_override" if {
	input.candidate.layer == "policy"
	change == "different"
}

fired contains "knowledge_override" if {
	input.candidate.layer == "knowledge"
	change == "different"
}

fired contains "delete_key_fact" if {
	input.op == "delete"
	input.candidate.layer == "state"
}

fired contains "delete_key_fact" if {
	input.op == "delete"
	input.candidate.layer == "policy"
}

fired contains "pending_conflict" if {
	some p in input.pending # usually none: stop here
	input.op == "write"
	differs(p)
}

# --- model inferences

fired contains "inference_key_fact" if {
	input.candidate.candidateSource == "model-inference"
	input.candidate.layer == "state"
	change != "same"
}

fired contains "inference_key_fact" if {
	input.candidate.candidateSource == "model-inference"
	input.candidate.layer == "policy"
	change != "same"
}

fired contains "inference_unverified" if {
	input.candidate.candidateSource == "model-inference"
	input.candidate.layer == "knowledge"
	input.op == "write"
	not has_evidence
}

# --- apply: the low-risk baseline of each layer; overrides of knowledge
# and state have none, the rules above decide them.

fired contains "same_as_current" if {
	input.current != null # most writes fill an empty slot: stop here
	change == "same"
}

fired contains "checkpoint" if {
	input.candidate.layer == "checkpoint"
	input.op == "write"
}

fired contains "preference" if {
	input.candidate.layer == "preference"
	input.op == "write"
}

fired contains "knowledge_verified" if {
	input.candidate.layer == "knowledge"
	input.op == "write"
	input.current == null
	not unverified_inference
}

fired contains "new_fact" if {
	input.candidate.layer == "state"
	input.op == "write"
	input.current == null
}

fired contains "delete" if {
	input.op == "delete"
	input.candidate.layer == "knowledge"
}

fired contains "delete" if {
	input.op == "delete"
	input.candidate.layer == "preference"
}

fired contains "delete" if {
	input.op == "delete"
	input.candidate.layer == "checkpoint"
}

# --- conditions

# change compares a write with the slot's active version: "new" (the slot
# has none), "same" (it repeats it) or "different" (it would override it);
# a deletion is "delete".
change := "new" if {
	input.current == null
	input.op == "write"
} else := "delete" if {
	input.op == "delete"
} else := "same" if {
	not differs(input.current)
} else := "different"

unverified_inference if {
	input.candidate.candidateSource == "model-inference"
	not has_evidence
}

has_evidence if input.candidate.evidence.excerpt != ""

has_evidence if input.candidate.evidence.sourceRef != ""

# differs(rec) compares the candidate with another version of its slot: on
# structured values when both have one, else on the normalized text.
differs(rec) := input.candidate.value != rec.value if {
	candidate_has_value
	has_value(rec)
} else := text != object.get(rec, "text_norm", "")

# --- drop: chit-chat and questions are not memories. Only for writes a
# dialect inferred from a conversation (Mem0 adds with infer, or extracted
# facts): what a user or tool writes explicitly is kept as written.

fired contains "not_a_memory" if {
	ref := input.candidate.evidence.sourceRef # most writes have none: stop here
	input.dialect == "mem0" # indexed: other dialects skip the rule
	from_conversation(ref)
	chitchat_or_question
}

from_conversation(ref) if {
	some prefix in data.memgate.config.conversation_sources
	startswith(ref, prefix)
}

chitchat_or_question if data.memgate.config.chitchat[trim_space(text)]

chitchat_or_question if {
	some suffix in data.memgate.config.question_ends
	endswith(trim_space(summary), suffix)
}

chitchat_or_question if {
	some prefix in data.memgate.config.question_starts
	startswith(trim_left(text, " "), prefix)
}

# Chinese questions carry their question word anywhere in the sentence.
chitchat_or_question if {
	some word in data.memgate.config.question_contains
	contains(text, word)
}
