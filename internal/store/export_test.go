package store

import "context"

// MigrateTo exposes migrateTo to the tests.
func (s *Store) MigrateTo(ctx context.Context, version int32) error { return s.migrateTo(ctx, version) }
