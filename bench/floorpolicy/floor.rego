# The floor policy: every write is low risk and applied, without reading
# it. Only for measuring what the write path costs without policy's rules
# (memgate-bench writepath -policy-dir bench/floorpolicy); never deploy it.
package memgate

placement := {"layer": "", "factType": "", "subjectId": "", "value": null}

decision := {
	"risk": "low", "action": "apply", "categories": [], "affects": [],
	"reasons": [{"rule": "floor", "message": "the floor policy applies every write"}],
}
