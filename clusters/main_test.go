package clusters

import (
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TestMain drops apimachinery's error backoff before any test runs: it
// spaces the errors client-go logs with a sleep measured from the last
// error on a clock that synctest bubbles reset, so that an error logged
// in a bubble (a failed discovery) after an error logged on the real
// clock sleeps for years of the bubble's time, which the shutdown tests
// would take for a manager waiting on a timer. Only logging is spaced by
// it; nothing else in client-go reads it.
func TestMain(m *testing.M) {
	utilruntime.ErrorHandlers = utilruntime.ErrorHandlers[:1]
	os.Exit(m.Run())
}
