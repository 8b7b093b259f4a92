package store

import (
	"context"
	"time"
)

// MigrateTo exposes migrateTo to the tests.
func (s *Store) MigrateTo(ctx context.Context, version int32) error { return s.migrateTo(ctx, version) }

// SetMigrateLockTimeout shortens the migrations' lock_timeout for a test.
func (s *Store) SetMigrateLockTimeout(d time.Duration) { s.lockTimeout = d }

// SetRetentionMax lowers a table's row bound for this store.
func (s *Store) SetRetentionMax(table string, max int) {
	if s.retentionMaxFor == nil {
		s.retentionMaxFor = map[string]int{}
	}
	s.retentionMaxFor[table] = max
}

// TradesStatements are the trades list's statements: every sender's and
// one sender's.
const TradesAll, TradesOf = tradesAll, tradesOf
