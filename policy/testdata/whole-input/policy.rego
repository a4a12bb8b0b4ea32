# An operator-style policy that reads the input document as a whole: its
# size, every string in it, its null fields, a lookup by a path from data.
# The sidecar cannot prune such an input, and must not try.
package memgate

import data.memgate_config as config

size := count(json.marshal(input))

# Every string anywhere in the input, text facts included.
strings_in_input contains lower(v) if {
	walk(input, [_, v])
	is_string(v)
}

flagged contains word if {
	some s in strings_in_input
	some word in config.flag_words
	contains(s, word)
}

null_fields := count([k | some k; input[k] == null])

looked_up := object.get(input, config.lookup_path, "none")

remaining := object.remove(input, ["candidate"])

fired contains "oversized" if size > config.max_input_bytes

fired contains "flagged" if count(flagged) > 0

fired contains "secret_found" if count(input.secrets) > 0

fired contains "judge_high" if input.judge.risk == "high"

fired contains "inferred" if looked_up == "model-inference"

fired contains "urgent" if input.candidate.text_features.urgent

fired contains "busy_slot" if count(remaining.pending) > 1

fired contains "sparse" if null_fields > 2

rule_ids := sort(fired) if count(fired) > 0
else := ["plain"]

default action := "apply"

action := "reject" if "secret_found" in fired
else := "review" if count(fired) > 0

default risk := "low"

risk := "high" if action != "apply"

decision := {
	"risk": risk,
	"action": action,
	"categories": [],
	"reasons": [{"rule": id, "message": config.messages[id]} | some id in rule_ids],
	"affects": [],
}
