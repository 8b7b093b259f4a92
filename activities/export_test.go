package activities

import "github.com/pacer-dev/pacer"

// BatchForTest exposes batch to the package's external tests. A function,
// not a method: every exported method of Activities is registered as one.
func BatchForTest(a *Activities, set []string, in pacer.TeneroInput, res *pacer.TeneroResult) []string {
	return a.batch(set, in, res)
}
