# An operator-style policy whose references into input are built from
# data: fields chosen by configuration, signals named in data, a path
# looked up with object.get, a function given parts of the input, a rule
# evaluated under `with`. The decision's references can be bounded (the
# candidate is read field by field through a variable key, so whole); the
# placement reads the input through object.get, so it gets all of it.
package memgate

import data.memgate_config as config

# The fields the operator watches, by name from data.
watched contains name if {
	some name in config.watched_fields
	input.candidate[name]
}

# Signals named in data, read from the text facts with a dynamic key.
signal contains name if {
	some name in config.signals
	input.candidate.text_features[name]
}

ranked := input.candidate.text_first[config.rank_list]

# A function over parts of the input.
same_text(a, b) if a.text_norm == b.text_norm

repeats_current if same_text(input.candidate, input.current)

repeats_pending if {
	some i
	same_text(input.candidate, input.pending[i])
}

pending_layers := {l | some p in input.pending; l := p.layer}

every_pending_low if {
	every p in input.pending {
		p.riskLevel == "low"
	}
}

strict if count(signal) >= config.signal_threshold

# The same rule with the threshold an operator would test: one signal.
strict_alone if strict with data.memgate_config.signal_threshold as 1

label := "signal" if {
	strict
} else := "weak signal" if {
	strict_alone
} else := "quiet"

fired contains "watched" if count(watched) > 0

fired contains "signal" if label != "quiet"

fired contains "repeat" if repeats_current

fired contains "repeat" if repeats_pending

fired contains "layer_mix" if count(pending_layers) > 1

fired contains "pending_risky" if {
	count(input.pending) > 0
	not every_pending_low
}

fired contains "ranked" if ranked == "money"

rule_ids := sort(fired) if count(fired) > 0
else := ["fine"]

action := "review" if count(fired) > 0
else := "apply"

decision := {
	"risk": {"review": "medium", "apply": "low"}[action],
	"action": action,
	"categories": [],
	"reasons": [{"rule": id, "message": sprintf("%s (%s)", [config.messages[id], label])} | some id in rule_ids],
	"affects": [],
}

# Placement: a layer named in data for the first signal found, the fact
# type looked up by a path from data.
placement := {
	"layer": config.signal_layers[name],
	"factType": object.get(input, config.fact_path, "note"),
} if {
	some name in config.signals
	input.candidate.text_features[name]
}
