package store

import (
	"context"
	"time"
)

// MigrateTo exposes migrateTo to the tests.
func (s *Store) MigrateTo(ctx context.Context, version int32) error { return s.migrateTo(ctx, version) }

// SetMigrateLockTimeout shortens the migrations' lock_timeout for a test.
func (s *Store) SetMigrateLockTimeout(d time.Duration) { s.lockTimeout = d }
