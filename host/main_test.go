package host

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ctx is the context of the tests' calls into the host.
var ctx = context.Background()
