package testenv

import (
	"context"
	"testing"

	"github.com/pacer-dev/pacer/internal/store"
)

// Store opens a store on a private schema (PostgresURL) with every
// migration applied, closed when t ends.
func Store(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, PostgresURL(t))
	if err != nil {
		t.Fatalf("testenv: open store: %v", err)
	}
	t.Cleanup(st.Close)
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("testenv: migrate: %v", err)
	}
	return st
}
