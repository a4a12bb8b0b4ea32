# METADATA
# title: memgate default risk policy
# description: |
#   The two-tier rule of memgate's DESIGN §2: checkpoints, low-impact
#   preferences, verified knowledge and conflict-free new facts apply at once;
#   strategy constraints, permission boundaries, overrides of key facts and
#   model inferences about state or policy wait for a human; secrets are
#   rejected. The sidecar queries data.memgate.decision.
package memgate

# Free text (no layer) is decided as the layer its text implies, put into
# input so the rules' layer conditions stay indexable.
decision := verdict if input.candidate.layer != ""

decision := v if {
	input.candidate.layer == ""
	v := verdict with input.candidate.layer as layer
}

# verdict is defined only when a rule fired, so a gap in the rules is an
# undefined decision, which the sidecar fails closed on. One rule firing is
# the common case and is read off its configuration directly; every
# document reference and comprehension costs about a microsecond.
verdict := object.union(outcome, {
	"affects": affects,
	"layer": layer,
	"factType": fact_type,
	"subjectId": subject_id,
	"value": value,
})

outcome := {
	"risk": r.risk,
	"categories": r.categories,
	"action": r.action,
	"reasons": [{"rule": id, "message": r.message}],
} if {
	count(fired) == 1
	some id in fired
	r := data.memgate.config.rules[id]
} else := {
	"risk": ["low", "medium", "high"][max([{"low": 0, "medium": 1, "high": 2}[r.risk] | some r in specs])],
	"categories": sort({c | some r in specs; some c in r.categories}),
	"action": ["apply", "review", "reject"][max([{"apply": 0, "review": 1, "reject": 2}[r.action] | some r in specs])],
	"reasons": [{"rule": r.rule, "message": r.message} | some r in specs],
} if {
	rules := data.memgate.config.rules
	specs := [object.union(rules[id], {"rule": id}) | some id in fired]
	count(specs) > 1
}
