# Per-rule shadow mode: a rule whose entry in data.memgate_config.rules
# carries "mode": "shadow" fires and is reported as before, and the
# decision says its park or rejection is not enforced (shadow).
package memgate_test

import data.memgate_config as config

import data.memgate

status_text := text("The release is now paused", " the release is now paused ")

test_no_rule_shadowed_no_shadow if {
	d := decide(status_text) with config.rules.status_change.mode as "enforce"
	d.action == "review"
	not d.shadow
}

test_the_only_rule_that_parks_shadowed_applies if {
	d := decide(status_text) with config.rules.status_change.mode as "shadow"
	rules(d) == {"new_fact", "status_change"}
	d.action == "review" # what policy says stays
	d.shadow == {"rules": ["status_change"], "action": "apply"}
}

test_a_rule_not_shadowed_still_parks if {
	inp := write({
		"layer": "policy", "factType": "publish.auto", "subjectId": "project-alpha",
		"summary": "auto-publish off", "text_norm": " auto publish off ", "value": {"enabled": false},
	})
	d := decide(inp) with config.rules.strategy_in_text.mode as "shadow"
		with config.rules.strategy_constraint.mode as "enforce"
	rules(d) == {"strategy_constraint", "strategy_in_text"}
	d.action == "review"
	d.shadow == {"rules": ["strategy_in_text"], "action": "review"}
}

test_every_rule_that_parks_shadowed_applies if {
	inp := write({
		"layer": "policy", "factType": "publish.auto", "subjectId": "project-alpha",
		"summary": "auto-publish off", "text_norm": " auto publish off ", "value": {"enabled": false},
	})
	d := decide(inp) with config.rules.strategy_in_text.mode as "shadow"
		with config.rules.strategy_constraint.mode as "shadow"
	d.action == "review"
	d.shadow == {"rules": ["strategy_constraint", "strategy_in_text"], "action": "apply"}
}

# The policy may mark secret_detected shadowed; the sidecar never lets a
# secret through (memory.Governor), and the decision still rejects.
test_a_shadowed_secret_rule_still_rejects if {
	inp := object.union(text("my password is hunter2!", " my password is hunter2 "), {"secrets": [{"field": "summary", "rule": "password-assignment"}]})
	d := decide(inp) with config.rules.secret_detected.mode as "shadow"
	d.action == "reject"
	"secret_detected" in rules(d)
}

# The rule's mode is data about the rule, not part of the decision.
test_a_rule_mode_is_not_in_the_decision if {
	inp := write({"layer": "policy", "factType": "tone.formal", "summary": "be formal", "text_norm": " be formal "})
	d := decide(inp) with config.rules.strategy_constraint.mode as "enforce"
	rules(d) == {"strategy_constraint"}
	not d.mode
	not d.shadow
}

test_a_shadowed_rule_firing_alone_applies if {
	inp := write({"layer": "policy", "factType": "tone.formal", "summary": "be formal", "text_norm": " be formal "})
	d := decide(inp) with config.rules.strategy_constraint.mode as "shadow"
	rules(d) == {"strategy_constraint"}
	d.action == "review"
	d.shadow == {"rules": ["strategy_constraint"], "action": "apply"}
}
