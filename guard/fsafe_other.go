//go:build !linux

package guard

import (
	"errors"
	"os"
)

// Off Linux: no openat2 (the component walk opens every path), no
// renameat2 (a plain rename; a file renamed over the path in the instant
// between the guard's check and its rename is not handed back) and no
// leases (a replaced file is looked at right after the rename and once
// more at the next poll).

var errNoRenameat2 = errors.New("renameat2 flags not supported")

func openat2Beneath(int, string, int) (int, error, bool) { return -1, nil, false }

func renameExchange(int, string, string) error { return errNoRenameat2 }

func renameNoReplace(int, string, string) error { return errNoRenameat2 }

func heldElsewhere(*os.File) (held, known bool) { return false, false }

func takeLease(*os.File) (ok, busy bool) { return false, false }

func leaseBroken(*os.File) bool { return false }

func releaseLease(*os.File) {}
