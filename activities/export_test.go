package activities

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer"
)

// BatchForTest exposes batch to the package's external tests. A function,
// not a method: every exported method of Activities is registered as one.
func BatchForTest(ctx context.Context, a *Activities, set []string, in pacer.TeneroInput, now time.Time, res *pacer.TeneroResult) ([]string, error) {
	return a.tokensToFetch(ctx, set, in, now, res)
}
