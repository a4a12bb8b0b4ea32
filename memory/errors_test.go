package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestErrorWrapsItsCause(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		cause     error
		code, msg string
	}{
		{"wrapped", Errorf(EUNAVAILABLE, "policy: %w", context.DeadlineExceeded), context.DeadlineExceeded, EUNAVAILABLE, "policy: context deadline exceeded"},
		{"wrapped twice", fmt.Errorf("submit: %w", Errorf(EINVALID, "value: %w", errBadValue)), errBadValue, EINVALID, "value: bad value"},
		{"formatted, not wrapped", Errorf(EINVALID, "value: %v", errBadValue), nil, EINVALID, "value: bad value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorCode(tt.err); got != tt.code {
				t.Errorf("code %q, want %q", got, tt.code)
			}
			if got := ErrorMessage(tt.err); got != tt.msg {
				t.Errorf("message %q, want %q", got, tt.msg)
			}
			if tt.cause != nil && !errors.Is(tt.err, tt.cause) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.cause)
			}
			if tt.cause == nil && errors.Is(tt.err, errBadValue) {
				t.Errorf("%v wraps a cause formatted with %%v", tt.err)
			}
		})
	}
}

var errBadValue = errors.New("bad value")
