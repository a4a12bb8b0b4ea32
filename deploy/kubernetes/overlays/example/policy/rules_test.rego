# One or more tests for every rule of the default policy.
package memgate_test

import data.memgate_config as config

import data.memgate

# --- secret_detected

test_secret_password_is_rejected if {
	d := decide(text("my password is hunter2", " my password is hunter2 "))
	d.action == "reject"
	d.risk == "high"
	"secret_detected" in rules(d)
}

test_secret_api_key_assignment_is_rejected if {
	d := decide(text("use OPENAI_API_KEY=sk-proj-AbCdEf0123456789xyz for the bot", " use openai api key sk proj abcdef0123456789xyz for the bot "))
	d.action == "reject"
}

test_secret_chinese_password_is_rejected if {
	d := decide(text("服务器的密码是 Abc12345!", " 服务器的密码是abc12345 "))
	d.action == "reject"
}

test_secret_in_evidence_is_rejected if {
	d := decide(write({
		"layer": "knowledge", "summary": "deploy uses the CI token", "text_norm": " deploy uses the ci token ",
		"evidence": {"excerpt": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
	}))
	d.action == "reject"
}

test_secret_in_value_is_rejected if {
	d := decide(write({
		"layer": "knowledge", "factType": "ci.credentials", "summary": "CI credentials", "text_norm": " ci credentials ",
		"value": {"aws_key": "AKIAABCDEFGHIJKLMNOP"},
	}))
	d.action == "reject"
}

test_talk_about_passwords_is_not_a_secret if {
	d := decide(text("The password policy requires twelve characters", " the password policy requires twelve characters "))
	not "secret_detected" in rules(d)
	d.action == "apply"
}

# --- strategy_constraint and permission_boundary

test_strategy_constraint_native_policy_write if {
	d := decide(write({
		"layer": "policy", "factType": "publish.auto", "subjectId": "project-alpha",
		"summary": "auto-publish off", "text_norm": " auto publish off ", "value": {"enabled": false},
	}))
	d.action == "review"
	d.risk == "high"
	d.categories == ["strategy"]
	rules(d) == {"strategy_constraint"}
}

test_strategy_constraint_unknown_fact_type if {
	d := decide(write({"layer": "policy", "factType": "tone.formal", "summary": "be formal", "text_norm": " be formal "}))
	rules(d) == {"strategy_constraint"}
}

test_permission_boundary if {
	d := decide(text("The agent has no access to the finance repo of project omega", " the agent has no access to the finance repo of project omega "))
	d.action == "review"
	d.categories == ["strategy"]
	rules(d) == {"permission_boundary"}
}

# --- strategy_in_text

test_strategy_in_text_filed_as_knowledge if {
	d := decide(write({"layer": "knowledge", "summary": "auto-publish is off for alpha", "text_norm": " auto publish is off for alpha "}))
	d.action == "review"
	d.risk == "medium"
	d.categories == ["strategy"]
	"strategy_in_text" in rules(d)
}

test_strategy_words_in_a_checkpoint_do_not_escalate if {
	d := decide(write({"layer": "checkpoint", "summary": "step 4: checked auto-publish settings", "text_norm": " step 4 checked auto publish settings "}))
	d.action == "apply"
	rules(d) == {"checkpoint"}
}

# --- state_override and knowledge_override

phase_write := write({
	"layer": "state", "factType": "status.phase", "subjectId": "project-alpha",
	"summary": "Project alpha is in phase 3", "text_norm": " project alpha is in phase 3 ",
})

test_state_override if {
	cur := active({"layer": "state", "factType": "status.phase", "summary": "Project alpha is in phase 2", "text_norm": " project alpha is in phase 2 "})
	d := decide(with_current(phase_write, cur))
	d.action == "review"
	d.risk == "high"
	d.categories == ["state_override"]
	rules(d) == {"state_override"}
}

test_state_override_compares_values_not_wording if {
	cand := write({"layer": "policy", "factType": "publish.auto", "summary": "项目 alpha 当前阶段禁止自动发布", "text_norm": " 项目alpha当前阶段禁止自动发布 ", "value": {"enabled": false}})
	same := active({"layer": "policy", "factType": "publish.auto", "summary": "auto-publish is disabled for project alpha", "text_norm": " auto publish is disabled for project alpha ", "value": {"enabled": false}})
	d1 := decide(with_current(cand, same))
	not "state_override" in rules(d1)
	"same_as_current" in rules(d1)
	other := object.union(same, {"value": {"enabled": true}})
	d2 := decide(with_current(cand, other))
	"state_override" in rules(d2)
	d2.categories == ["state_override", "strategy"]
}

test_knowledge_override if {
	cand := write({"layer": "knowledge", "factType": "api.rate_limit", "summary": "The API allows 100 requests a minute", "text_norm": " the api allows 100 requests a minute "})
	cur := active({"layer": "knowledge", "factType": "api.rate_limit", "summary": "The API allows 60 requests a minute", "text_norm": " the api allows 60 requests a minute "})
	d := decide(with_current(cand, cur))
	d.action == "review"
	d.risk == "medium"
	rules(d) == {"knowledge_override"}
}

test_preference_update_applies if {
	cand := write({"layer": "preference", "factType": "preference.language", "summary": "reply in English", "text_norm": " reply in english "})
	cur := active({"layer": "preference", "factType": "preference.language", "summary": "reply in Chinese", "text_norm": " reply in chinese "})
	d := decide(with_current(cand, cur))
	d.action == "apply"
	rules(d) == {"preference"}
}

# --- same_as_current

test_same_as_current if {
	cur := active({"layer": "state", "factType": "status.phase", "summary": "Project alpha is in phase 3!", "text_norm": " project alpha is in phase 3 "})
	d := decide(with_current(phase_write, cur))
	d.action == "apply"
	d.risk == "low"
	rules(d) == {"same_as_current"}
}

# --- delete_key_fact and delete

test_delete_key_fact if {
	d := decide(deletion({"layer": "state", "factType": "status.phase", "subjectId": "project-alpha"}))
	d.action == "review"
	d.categories == ["state_override"]
	rules(d) == {"delete_key_fact"}
}

test_delete_preference if {
	d := decide(deletion({"layer": "preference", "factType": "preference.language"}))
	d.action == "apply"
	rules(d) == {"delete"}
}

# --- pending_conflict

test_pending_conflict if {
	parked := active({"status": "pending_review", "layer": "state", "factType": "status.phase", "summary": "Project alpha is in phase 4", "text_norm": " project alpha is in phase 4 "})
	d := decide(with_pending(phase_write, [parked]))
	d.action == "review"
	d.risk == "medium"
	rules(d) == {"new_fact", "pending_conflict"}
}

test_pending_duplicate_is_no_conflict if {
	parked := active({"status": "pending_review", "layer": "state", "factType": "status.phase", "summary": "Project alpha is in phase 3", "text_norm": " project alpha is in phase 3 "})
	d := decide(with_pending(phase_write, [parked]))
	d.action == "apply"
}

# --- inference_key_fact, inference_unverified and knowledge_verified

test_inference_creating_state if {
	d := decide(inferred(phase_write))
	d.action == "review"
	d.risk == "high"
	d.categories == ["inference"]
	rules(d) == {"inference_key_fact", "new_fact"}
}

test_inference_overriding_state if {
	cur := active({"layer": "state", "factType": "status.phase", "summary": "Project alpha is in phase 2", "text_norm": " project alpha is in phase 2 "})
	d := decide(inferred(with_current(phase_write, cur)))
	d.categories == ["inference", "state_override"]
	rules(d) == {"inference_key_fact", "state_override"}
}

test_inference_unverified_knowledge if {
	d := decide(inferred(text("The user probably works in finance", " the user probably works in finance ")))
	d.action == "apply"
	d.risk == "medium"
	d.categories == ["inference"]
	rules(d) == {"inference_unverified"}
}

test_inference_with_evidence_is_verified if {
	inp := inferred(write({"layer": "knowledge", "summary": "The user works in finance", "text_norm": " the user works in finance ", "evidence": {"excerpt": "I work in finance"}}))
	d := decide(inp)
	d.risk == "low"
	rules(d) == {"knowledge_verified"}
}

test_knowledge_verified if {
	d := decide(text("The Berlin office opens at 9", " the berlin office opens at 9 "))
	d.action == "apply"
	d.risk == "low"
	d.categories == []
	rules(d) == {"knowledge_verified"}
}

# --- checkpoint, preference, new_fact

test_checkpoint if {
	d := decide(text("Finished step 3 of the data migration", " finished step 3 of the data migration "))
	d.action == "apply"
	rules(d) == {"checkpoint"}
}

test_preference if {
	d := decide(text("I prefer short answers", " i prefer short answers "))
	d.action == "apply"
	rules(d) == {"preference"}
}

test_new_fact if {
	d := decide(phase_write)
	d.action == "apply"
	d.risk == "low"
	rules(d) == {"new_fact"}
}

# --- the decision document

test_decision_has_every_field if {
	d := decide(text("The Berlin office opens at 9", " the berlin office opens at 9 "))
	object.keys(d) == {"risk", "categories", "action", "reasons", "affects", "layer", "factType", "subjectId", "value"}
	every r in d.reasons {
		object.keys(r) == {"rule", "message"}
		r.message != ""
	}
}

test_every_rule_is_configured if {
	every r in {
		"secret_detected", "strategy_constraint", "permission_boundary", "strategy_in_text",
		"state_override", "knowledge_override", "delete_key_fact", "inference_key_fact",
		"inference_unverified", "pending_conflict", "checkpoint", "preference",
		"knowledge_verified", "new_fact", "same_as_current", "delete",
	} {
		config.rules[r].action in {"apply", "review", "reject"}
		config.rules[r].risk in {"low", "medium", "high"}
	}
}

# Each rule's entry is the decision it gives alone (less affects): exactly
# an action, a risk, categories and one reason naming the rule.
test_every_rule_entry_is_a_decision if {
	every id, r in config.rules {
		object.keys(r) == {"action", "risk", "categories", "reasons"}
		r.action in {"apply", "review", "reject"}
		r.risk in {"low", "medium", "high"}
		every c in r.categories {
			c in {"strategy", "state_override", "inference"}
		}
		count(r.reasons) == 1
		r.reasons[0].rule == id
		object.keys(r.reasons[0]) == {"rule", "message"}
		r.reasons[0].message != ""
	}
}

# A write no rule covers has no decision, which the sidecar fails closed on.
test_uncovered_write_is_undecided if {
	not decide(write({"layer": "gossip", "summary": "x", "text_norm": " x "}))
}

# --- not_a_memory

conversational(inp) := object.union(inp, {"dialect": "mem0", "candidate": object.union(inp.candidate, {"evidence": {"sourceRef": "mem0:infer:user#0"}})})

test_not_a_memory_greeting if {
	d := decide(conversational(text("Hi!", " hi ")))
	d.action == "reject"
	"not_a_memory" in rules(d)
}

test_not_a_memory_question if {
	d := decide(conversational(text("What is the weather like today?", " what is the weather like today ")))
	d.action == "reject"
	"not_a_memory" in rules(d)
}

test_not_a_memory_chinese_question if {
	d := decide(conversational(text("今天天气怎么样", " 今天天气怎么样 ")))
	d.action == "reject"
}

test_not_a_memory_keeps_facts if {
	d := decide(conversational(text("I live in Berlin", " i live in berlin ")))
	not "not_a_memory" in rules(d)
	d.action == "apply"
}

test_not_a_memory_only_for_conversations if {
	d := decide(text("What is the weather like today?", " what is the weather like today "))
	not "not_a_memory" in rules(d)
}
