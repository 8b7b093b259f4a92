// Package actor carries who is acting (an operator token's name, or "cli")
// from the edge that authenticated them to the code that records what they
// did in the audit log (SPEC §10.2). It sits apart from internal/api and the
// admin handlers so both can use it without importing each other.
package actor

import "context"

// CLI is the actor of changes made with pacer's command line.
const CLI = "cli"

// Unknown is the actor of a change whose context names nobody.
const Unknown = "unknown"

type key struct{}

// With returns ctx carrying name as the acting operator.
func With(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, key{}, name)
}

// From returns the acting operator's name, or Unknown.
func From(ctx context.Context) string {
	if name, ok := ctx.Value(key{}).(string); ok && name != "" {
		return name
	}
	return Unknown
}
