package slotmodel

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestSlotModelRejectsLostUpdates proves the model catches what it must: a
// history where two applied writes both replaced the same head (a lost
// update), or an approval succeeded against a changed slot, is illegal.
func TestSlotModelRejectsLostUpdates(t *testing.T) {
	op := func(call, ret int64, in Input, out Output) porcupine.Operation {
		return porcupine.Operation{Input: in, Call: call, Output: out, Return: ret}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    porcupine.CheckResult
	}{
		{"sequential writes chain", []porcupine.Operation{
			op(0, 1, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(2, 3, Input{Op: OpWrite}, Output{Result: ResOK, ID: "b", Ref: "a"}),
			op(4, 5, Input{Op: OpRollback, ID: "b"}, Output{Result: ResOK, Ref: "a"}),
			op(6, 7, Input{Op: OpRead}, Output{Result: ResOK, Ref: "a"}),
		}, porcupine.Ok},
		{"lost update", []porcupine.Operation{
			op(0, 1, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(2, 3, Input{Op: OpWrite}, Output{Result: ResOK, ID: "b", Ref: "a"}),
			op(4, 5, Input{Op: OpWrite}, Output{Result: ResOK, ID: "c", Ref: "a"}),
		}, porcupine.Illegal},
		{"concurrent writes may order either way", []porcupine.Operation{
			op(0, 1, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(2, 6, Input{Op: OpWrite}, Output{Result: ResOK, ID: "b", Ref: "c"}),
			op(3, 5, Input{Op: OpWrite}, Output{Result: ResOK, ID: "c", Ref: "a"}),
		}, porcupine.Ok},
		{"approval over a changed slot", []porcupine.Operation{
			op(0, 1, Input{Op: OpPark}, Output{Result: ResOK, ID: "p"}),
			op(2, 3, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(4, 5, Input{Op: OpApprove, ID: "p"}, Output{Result: ResOK, Ref: "a"}),
		}, porcupine.Illegal},
		{"stale approval re-parks against the new head", []porcupine.Operation{
			op(0, 1, Input{Op: OpPark}, Output{Result: ResOK, ID: "p"}),
			op(2, 3, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(4, 5, Input{Op: OpApprove, ID: "p"}, Output{Result: ResStale}),
			op(6, 7, Input{Op: OpApprove, ID: "p"}, Output{Result: ResOK, Ref: "a"}),
			op(8, 9, Input{Op: OpApprove, ID: "p"}, Output{Result: ResDecided}),
		}, porcupine.Ok},
		{"double decision", []porcupine.Operation{
			op(0, 1, Input{Op: OpPark}, Output{Result: ResOK, ID: "p"}),
			op(2, 3, Input{Op: OpReject, ID: "p"}, Output{Result: ResOK}),
			op(4, 5, Input{Op: OpApprove, ID: "p"}, Output{Result: ResOK}),
		}, porcupine.Illegal},
		{"rollback of a superseded version", []porcupine.Operation{
			op(0, 1, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(2, 3, Input{Op: OpWrite}, Output{Result: ResOK, ID: "b", Ref: "a"}),
			op(4, 5, Input{Op: OpRollback, ID: "a"}, Output{Result: ResOK}),
		}, porcupine.Illegal},
		{"read of a rolled back version", []porcupine.Operation{
			op(0, 1, Input{Op: OpWrite}, Output{Result: ResOK, ID: "a"}),
			op(2, 3, Input{Op: OpRollback, ID: "a"}, Output{Result: ResOK}),
			op(4, 5, Input{Op: OpRead}, Output{Result: ResOK, Ref: "a"}),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(Model, tc.history, 5*time.Second); got != tc.want {
				t.Fatalf("check = %s, want %s", got, tc.want)
			}
		})
	}
}
