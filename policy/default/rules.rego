# The rules of the two-tier model. Each adds its id to `fired`; its action,
# risk, categories and reason are in data.memgate_config.rules (the
# decision it gives when it fires alone), so an operator can retune a rule
# with data alone.
#
# Risk never goes down on the writer's word: the rules read `layer`, the
# highest of the layer the writer declared, the one the text reads as
# (text.rego) and the ones the slot holds (its active and pending
# versions), and the text rules fire whatever the layer. The write is
# placed (free text has its layer, see placement.rego).
package memgate

import data.memgate_config as config

# --- the layer a write is judged at

judged_layers contains input.candidate.layer

judged_layers contains input.candidate.declaredLayer

judged_layers contains input.candidate.inferredLayer

judged_layers contains input.current.layer

judged_layers contains l if l := input.pending[_].layer

judged_layers contains l if some l in text_layers

# The write document decides before the placement is in the input: the
# layer the text reads as comes from the placement rule itself.
judged_layers contains inferred_layer if input.unplaced

default layer := "knowledge"

layer := highest(judged_layers)

# --- reject: what must never be remembered. The sidecar scans every
# string of the candidate (summary, value, metadata, slot fields, actor,
# evidence) and reports what it found, by field and rule, in input.secrets:
# credentials, and personal data with kind "pii" (findings without a kind,
# as in audit logs written before, are credentials). Never the value.

fired contains "secret_detected" if {
	some f in input.secrets
	not pii_finding(f)
}

# Personal data: a payment card number, a national id number (US SSN,
# Chinese resident id) or an IBAN, each checked by its checksum. Rejected
# by default; an operator who wants a human to decide sets this rule's
# action to review in data.json, and the reviewer then sees the text. (A
# credential is rejected whatever this policy says: the sidecar forces it.)
fired contains "pii_detected" if {
	some f in input.secrets
	pii_finding(f)
}

pii_finding(f) if f.kind == "pii"

# A model judge (--judge-url) that reads a credential in the text.
fired contains "judge_secret" if input.judge.label == "secret"

# --- review: what the text says, whatever its layer. Not for a write that
# repeats the slot's active version: a human has seen that text already.

fired contains "memory_poisoning" if {
	text_poisoning
	risky("poisoning")
	not same_as_current
}

fired contains "memory_poisoning" if {
	text_injection
	not same_as_current
}

fired contains "fetched_code" if {
	text_runs_fetched_code
	not same_as_current
}

fired contains "strategy_in_text" if {
	text_rule
	risky("rule")
	not same_as_current
}

fired contains "strategy_in_text" if {
	input.candidate.text_first.policy_topic
	risky("policy_topic")
	not same_as_current
}

fired contains "permission_in_text" if {
	text_permission
	risky("permission")
	not same_as_current
}

fired contains "normative_text" if {
	text_unknown_rule
	not text_rule
	risky("unknown_rule")
	not same_as_current
}

fired contains "status_change" if {
	text_status_change
	risky("status_change")
	input.op == "write"
	not same_as_current
}

# The classifier alone, where it is confident (config.classifier.confident):
# text no lexicon recognises can still be a rule, an instruction to the
# agent, a change of state or a guess about one. (classified_risk only
# where no lexicon signal counts: a recognised status change stays a
# state.)
fired contains "classified_poisoning" if {
	classified("poisoning")
	not same_as_current
}

fired contains "classified_state_change" if {
	classified("state")
	input.op == "write"
	not same_as_current
}

fired contains "classified_inference" if {
	classified("inference")
	not same_as_current
}

fired contains "classified_risk" if {
	classified("risk")
	not lexicon_reads
	not classified("poisoning")
	not classified("state")
	not classified("inference")
	not same_as_current
}

fired contains "inference_in_text" if {
	text_inference
	risky("inference")
	not same_as_current
}

# Text the classifier cannot read: a language its lexicons do not cover.
# A judge, when one is configured and answered, reads it instead (its
# verdict raises risk through judge_flagged); otherwise a human does,
# unless an operator set this rule's action to apply.
fired contains "unreadable_text" if {
	input.candidate.text_features["lang.other"]
	not input.judge.risk
	not same_as_current
}

# Text that reads only once rot13 is undone or it is reversed: no ordinary
# memory is written so. (Base64 and hex readings are judged for what they
# say, like the rest of the text: features are found in them too.)
fired contains "obfuscated_text" if {
	input.candidate.text_features["text.obfuscated"]
	not same_as_current
}

# A model judge can raise risk, never lower it.
fired contains "judge_flagged" if {
	input.judge.risk != "low"
	input.judge.label != "secret"
	not same_as_current
}

# --- review: strategy constraints and permission boundaries. A
# policy-layer write fires its topic's rule (strategy_constraint or
# permission_boundary) unless it repeats the active version: when the slot
# is empty, for a deletion, or when it differs.

fired contains strategy_rule if {
	layer == "policy"
	input.current == null
}

fired contains strategy_rule if {
	layer == "policy"
	input.op == "delete"
}

fired contains strategy_rule if {
	layer == "policy"
	input.current.id
	overrides
}

strategy_rule := r if {
	r := config.topics[input.candidate.factType].rule
} else := "permission_boundary" if {
	text_permission
} else := "permission_boundary" if {
	fact_type_permission
} else := "strategy_constraint"

# --- review: replacing or deleting a key fact, racing a parked write

fired contains "state_override" if {
	layer in {"state", "policy"}
	input.current.id
	overrides
}

fired contains "knowledge_override" if {
	layer == "knowledge"
	input.current.id
	overrides
}

fired contains "delete_key_fact" if {
	input.op == "delete"
	layer in {"state", "policy"}
}

fired contains "pending_conflict" if {
	some i
	input.pending[i].id # usually none: stop here
	input.op == "write"
	pending_differs(i)
}

# --- model inferences: one about state or policy waits for a human unless
# it repeats the active version.

fired contains "inference_key_fact" if {
	input.candidate.candidateSource == "model-inference"
	layer in {"state", "policy"}
	not same_as_current
}

fired contains "inference_unverified" if {
	input.candidate.candidateSource == "model-inference"
	layer == "knowledge"
	input.op == "write"
	not has_evidence
}

# --- apply: the low-risk baseline of each layer; overrides of knowledge
# and state have none, the rules above decide them.

fired contains "same_as_current" if {
	input.current.id # an active version; most writes fill an empty slot: stop here
	same_as_current
}

fired contains "checkpoint" if {
	layer == "checkpoint"
	input.op == "write"
}

fired contains "preference" if {
	layer == "preference"
	input.op == "write"
}

fired contains "knowledge_verified" if {
	layer == "knowledge"
	input.op == "write"
	input.current == null
	input.candidate.candidateSource != "model-inference"
}

fired contains "knowledge_verified" if {
	layer == "knowledge"
	input.op == "write"
	input.current == null
	input.candidate.candidateSource == "model-inference"
	has_evidence
}

fired contains "new_fact" if {
	layer == "state"
	input.op == "write"
	input.current == null
}

fired contains "delete" if {
	input.op == "delete"
	layer == "knowledge"
}

fired contains "delete" if {
	input.op == "delete"
	layer == "preference"
}

fired contains "delete" if {
	input.op == "delete"
	layer == "checkpoint"
}

# --- conditions. Each test of the active version starts with whether there
# is one: most writes fill an empty slot, and then nothing else is evaluated.

# same_as_current: the write repeats the slot's active version.
same_as_current if {
	input.current.id
	input.op == "write"
	not current_differs
}

# overrides: the write would replace the slot's active version with
# different content.
overrides if {
	input.current.id
	input.op == "write"
	current_differs
}

has_evidence if input.candidate.evidence.excerpt != ""

has_evidence if input.candidate.evidence.sourceRef != ""

# current_differs and pending_differs(i) compare the write with another
# version of its slot: on structured values when both have one, else on the
# normalized text. They read the versions field by field, so the sidecar
# builds only those fields of them.
current_differs := input.candidate.value != input.current.value if {
	candidate_has_value
	input.current.value != null
} else := text != current_text

default current_text := ""

current_text := input.current.text_norm

pending_differs(i) := input.candidate.value != input.pending[i].value if {
	candidate_has_value
	input.pending[i].value != null
} else := text != pending_text(i)

pending_text(i) := t if {
	t := input.pending[i].text_norm
} else := ""

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
	some prefix in config.conversation_sources
	startswith(ref, prefix)
}

chitchat_or_question if config.chitchat[trim_space(text)]

chitchat_or_question if {
	some suffix in config.question_ends
	endswith(trim_space(summary), suffix)
}

chitchat_or_question if {
	some prefix in config.question_starts
	startswith(trim_left(text, " "), prefix)
}

# Chinese questions carry their question word anywhere in the sentence.
chitchat_or_question if {
	some word in config.question_contains
	contains(text, word)
}
