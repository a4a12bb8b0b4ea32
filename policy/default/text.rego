# Text signals: what the candidate's text says, whatever layer its writer
# declared. They are read from the features the sidecar finds in the
# folded, normalized text (config.features, see features.rego): modal
# words, imperatives, actions with side effects, reply style, permissions,
# status changes, hedges and instructions aimed at the model. A declared
# layer can raise risk, never lower it (DESIGN §1, rule 10): these signals
# name the layer the text reads as, and the rules in rules.rego fire on
# them whatever the layer.
package memgate

import data.memgate_config as config

# --- normative text: an obligation, a prohibition or a permission.

# Strong markers are normative alone: must, not allowed, needs approval,
# 必须, 禁止, 不得, 未经…; and a clause that opens with never / always /
# don't / only / 别 / 不要 / 一律…
strong_norm if input.candidate.text_features["norm.strong"]

strong_norm if input.candidate.text_features["lead.prohibit"]

normative if strong_norm

# Weak modals (can, may, should, 可以, 能, 应该, 直接…) are normative about
# an action with side effects when the agent is the one acting, or when
# the sentence sets a limit or a condition ("up to 50 dollars", "only",
# "without asking", 最多, 超过…): "Customers can cancel their subscription
# from the account page" describes a product, "The support bot can issue
# store credit up to 50 dollars" grants a permission.
normative if {
	input.candidate.text_features["norm.weak"]
	side_effect
	weak_scope
}

weak_scope if input.candidate.text_features["subject.agent"]

weak_scope if input.candidate.text_features["condition"]

# Bare modal judgements (can't, may not, is fine, 不能, 不许, 不介意…) are
# normative about an action with side effects whoever acts.
normative if {
	input.candidate.text_features["norm.bare"]
	side_effect
}

# A clause that opens with an imperative verb ("Ask finance before…",
# "Tell them…", "Use bullet points") is normative about what it names.
normative if {
	input.candidate.text_features["lead.verb"]
	side_effect
}

normative if {
	input.candidate.text_features["lead.verb"]
	input.candidate.text_features["style"]
}

# An action with side effects, or a resource's access: deploy, delete,
# send, pay, refund, access, 部署, 删除, 付款, 访问… (not "send me", "remind
# me": a notice to the user is about style).
side_effect if input.candidate.text_features["action"]

side_effect if input.candidate.text_features["permission"]

# Verbs that also edit text (drop, sign, change, post, 修改…) have side
# effects unless the text is about the agent's own writing: "Drop the 'hope
# this helps' line at the end of replies" is a style.
side_effect if {
	input.candidate.text_features["action.soft"]
	not input.candidate.text_features["style"]
}

# --- what the text is

# A rule about an action with side effects: a strategy constraint.
text_rule if {
	normative
	side_effect
}

# A rule about reply style, tone, format or language, and about nothing
# with side effects: a low-impact preference.
text_style if {
	normative
	input.candidate.text_features["style"]
	not side_effect
}

# A strong rule about something the lexicons do not place: when unsure,
# a human reads it.
text_unknown_rule if {
	strong_norm
	not side_effect
	not input.candidate.text_features["style"]
	not input.candidate.text_features["preference.verb"]
	unknown_rule_risky
}

# A strong modal about nothing the lexicons place is the weakest signal
# ("No, I did not.", "you must try the ramen"): it counts only where a
# gating head reaches config.classifier.unknown_rule_gate (default: the
# gate).
unknown_rule_risky if not input.candidate.text_scores

unknown_rule_risky if {
	some head in gate_heads
	input.candidate.text_scores[head] >= object.get(config.classifier, "unknown_rule_gate", config.classifier.gate)
}

# Who or what may access or act on which resource.
text_permission if input.candidate.text_features["permission"]

# A change of status of a task, project, release, service…: unambiguous
# status verbs (postponed, cancelled, on hold, 暂停, 延期, 叫停…) alone;
# weaker forms (is now, no longer, set to, 不再, 现在由…) with a thing
# that has a status.
text_status_change if input.candidate.text_features["status.change"]

text_status_change if {
	input.candidate.text_features["status.shift"]
	input.candidate.text_features["status.entity"]
}

# Text that tries to instruct the agent or its tools: memory poisoning.
text_poisoning if input.candidate.text_features["poisoning"]

# The phrases of prompt injection ("ignore previous instructions", "you
# are now", 忽略之前的指令…) are an attack wherever they appear: no
# ordinary text of the corpus has them, so they are not left to the
# classifier's gate.
text_injection if input.candidate.text_features["injection"]

# A remote script piped to a shell (curl … | sh, iwr … | iex): whoever
# wrote it and however it is framed ("setup tip"), a memory that has the
# agent run fetched code changes what it does to the world (DESIGN §2).
# The pattern is precise, so it is not left to the classifier's gate.
text_runs_fetched_code if input.candidate.text_features["code.fetched"]

# A guess (probably, seems, 看起来, 大概…) about a rule or a state.
text_inference if {
	input.candidate.text_features["hedge"]
	text_key
}

# A guess about something that has a status (a migration, an order, a
# project…).
text_inference if {
	input.candidate.text_features["hedge"]
	input.candidate.text_features["status.entity"]
}

text_key if text_rule

# What someone wants or means, guessed: "the customer most likely wants a
# downgrade", "老板的意思是…".
text_key if input.candidate.text_features["intent"]

text_key if text_permission

text_key if text_status_change

text_key if text_unknown_rule

text_key if input.candidate.text_first.policy_topic

text_key if config.topics[input.candidate.text_first.topic].layer == "state"

text_preference if input.candidate.text_features["preference.verb"]

text_preference if text_style

# text_layers: the layers the text reads as, from its strong signals
# where the classifier does not rule them out, and from the classifier's
# confident heads.
text_layers contains "policy" if {
	text_poisoning
	risky("poisoning")
}

text_layers contains "policy" if text_injection

text_layers contains "policy" if text_runs_fetched_code

text_layers contains "policy" if input.candidate.text_features["text.obfuscated"]

text_layers contains "policy" if {
	text_rule
	risky("rule")
}

text_layers contains "policy" if {
	text_permission
	risky("permission")
}

text_layers contains "policy" if {
	text_unknown_rule
	risky("unknown_rule")
}

text_layers contains "policy" if {
	input.candidate.text_first.policy_topic
	risky("policy_topic")
}

text_layers contains "policy" if classified("poisoning")

text_layers contains "policy" if {
	classified("risk")
	not lexicon_reads
	not classified("state")
	not classified("inference")
}

text_layers contains "state" if {
	text_status_change
	risky("status_change")
}

text_layers contains "state" if classified("state")

text_layers contains "preference" if text_preference

# --- what the classifier says (classifier.model, package textclass; its
# scores come in input.candidate.text_scores, one per head: risk,
# poisoning, state, inference). A lexicon signal above counts only where
# the classifier does not rule the text out: one of its gating heads
# (config.classifier.gate_heads) gives at least config.classifier.gate.
# Lexicons recognise forms ("must", an imperative, "launched");
# conversation, requests and how-to notes use the same forms without
# consequence, and the classifier, trained on labelled real text, tells
# them apart. Without scores (a policy without a model; plain opa test)
# every signal counts.
#
# The default gates on the risk and poisoning heads: they answer the
# gate's own questions (is this text high-risk? does it instruct the
# agent?), the risk head learning from every high-risk example. The
# state and inference heads each learn from one kind the risk head
# already covers, and a gate on the highest of four scores lets more
# ordinary text through the lexicons by chance: out of fold on the
# tuning rows, at the same gate, reading two heads parks 7% less
# ordinary text and catches as many persona prompts (policy/README.md,
# "The classifier").
gate_heads := object.get(config.classifier, "gate_heads", config.classifier.heads)

# risky(signal): the classifier does not rule the text out for one kind
# of lexicon signal. config.classifier.gates may give a kind its own gate
# (rule, policy_topic, permission, unknown_rule, status_change,
# inference, poisoning); the others read config.classifier.gate. A kind's
# own gate is chosen like the gate, out of fold on the tuning rows
# (policy/README.md, "The classifier").
risky(_) if not input.candidate.text_scores

risky(signal) if {
	some head in gate_heads
	input.candidate.text_scores[head] >= signal_gate(signal)
}

signal_gate(signal) := object.get(object.get(config.classifier, "gates", {}), signal, config.classifier.gate)

# lexicon_reads: a lexicon signal counts for the text (it then says what
# the text is, and the classifier's confident heads add nothing).
lexicon_reads if {
	text_rule
	risky("rule")
}

lexicon_reads if {
	text_permission
	risky("permission")
}

lexicon_reads if {
	text_unknown_rule
	risky("unknown_rule")
}

lexicon_reads if {
	text_status_change
	risky("status_change")
}

lexicon_reads if {
	text_inference
	risky("inference")
}

lexicon_reads if {
	text_poisoning
	risky("poisoning")
}

lexicon_reads if text_injection

lexicon_reads if text_runs_fetched_code

lexicon_reads if {
	input.candidate.text_first.policy_topic
	risky("policy_topic")
}

# classified(head): the classifier alone is confident enough to send the
# text to a human, whatever the lexicons found; only the heads listed in
# config.classifier.alone decide alone (the default lists those that
# learned from enough examples: risk and poisoning).
classified(head) if {
	head in config.classifier.alone
	input.candidate.text_scores[head] >= config.classifier.confident
	agrees(head)
}

# agrees(head): the risk head agrees with a narrower one. Poisoning, a
# change of state and a guess are kinds of high risk, so a text one of
# them is sure of while the risk head is not (config.classifier.agree) is
# one the model has not learned to read: text of words it never saw
# (names, jargon, word lists) hashed onto what it did see. Without
# config.classifier.agree every confident head counts.
agrees("risk")

agrees(head) if {
	head != "risk"
	not config.classifier.agree
}

agrees(head) if {
	head != "risk"
	input.candidate.text_scores.risk >= config.classifier.agree
}

# --- layers

# highest(ls) is the highest-ranked known layer of the set ls (a chain of
# lookups: cheaper than comparing ranks).
highest(ls) := "policy" if {
	"policy" in ls
} else := "state" if {
	"state" in ls
} else := "knowledge" if {
	"knowledge" in ls
} else := "preference" if {
	"preference" in ls
} else := "checkpoint" if {
	"checkpoint" in ls
}
